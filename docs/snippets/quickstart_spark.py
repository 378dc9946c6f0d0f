from tfrecord_io import spark as tfs

spark = tfs.session("local[2]")  # or your own SparkSession: the jar is added on first use
sc = spark.sparkContext
data = "hdfs://namenode:8020/tmp/quickstart"  # or a local directory

# Records as bytes: an RDD in, part files out (each with its split index), and back.
tfs.save_records(sc.parallelize([b"first", b"second", b"third"], 2), f"{data}/raw")
records = tfs.load_records(sc, f"{data}/raw")  # an RDD of bytes
print(sorted(records.collect()))  # [b'first', b'second', b'third']

# DataFrames <-> tf.train.Example, converted in the executors' JVMs (no TensorFlow there).
df = spark.createDataFrame(
    [(7, [0.5, 1.5], "a"), (2, [2.5, 3.5], "b"), (1, [4.5, 5.5], "b")],
    "label BIGINT, x ARRAY<FLOAT>, day STRING",
)
df.write.format("tfrecord").mode("overwrite").partitionBy("day").save(f"{data}/examples")
examples = spark.read.format("tfrecord").load(f"{data}/examples")  # schema inferred
examples.orderBy("label").show()
counts = spark.sql(f"SELECT day, count(*) AS n FROM tfrecord.`{data}/examples` GROUP BY day")
counts.orderBy("day").show()
