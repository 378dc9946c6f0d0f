from tfrecord_io import fs

url = "hdfs://namenode:8020/tmp/fs"  # the same calls for local paths, webhdfs://, https:// (reads)
fs.makedirs(f"{url}/data/more")
with fs.open(f"{url}/data/part-0.txt", "w") as f:  # "rb", "wb", "r", "w"
    f.write("hello\n")
with fs.atomic_write(f"{url}/data/more/part-1.txt") as f:  # all or nothing
    f.write(b"world\n")
fs.rename(f"{url}/data/part-0.txt", f"{url}/data/part-00.txt")
fs.replace(f"{url}/data/more/part-1.txt", f"{url}/data/more/part-01.txt")  # over any old one

size = fs.stat(f"{url}/data/part-00.txt").size  # 6
names = fs.ls(f"{url}/data")  # its entries' URLs
matches = fs.glob(f"{url}/data/part-*")
tree = list(fs.walk(url))  # (directory, subdirectories, files), as os.walk
files = fs.expand([f"{url}/data", f"{url}/data/more/*.txt"])  # the data files, sorted, once each
fs.delete(f"{url}/data", recursive=True)
gone = not fs.exists(f"{url}/data")
