import pyarrow

from tfrecord_io import records

data = "hdfs://namenode:8020/tmp/records"  # or a local directory, or https:// to read
records.write(f"{data}/part-0.tfrecord", (b"record %d" % i for i in range(10_000)))  # whole or not
records.write(f"{data}/part-1.tfrecord.gz", [b"a", b"bc", b"def"])  # gzip, from the name

for record in records.read(f"{data}/part-0.tfrecord"):  # bytes, every CRC checked
    ...
for batch in records.read_batches(f"{data}/part-0.tfrecord", 4096):  # lists of bytes
    ...
for batch in records.read_batches(f"{data}/part-1.tfrecord.gz", 4096, format="arrow"):
    frame = pyarrow.table({"record": batch}).to_pandas()  # batch: a pyarrow.BinaryArray
