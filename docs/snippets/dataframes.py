from tfrecord_io import spark as tfs

spark = tfs.session()
data = "hdfs://namenode:8020/tmp/frames"
df = spark.createDataFrame(
    [(1, [0.1, 0.2], bytearray(b"\xff\xd8"), "mon"), (2, [0.3, 0.4], bytearray(b"\x00"), "tue")],
    "label BIGINT, image ARRAY<FLOAT>, jpeg BINARY, day STRING",
)
seq_df = spark.createDataFrame([(1, [[1.0, 2.0], [3.0]])], "id BIGINT, frames ARRAY<ARRAY<FLOAT>>")

# The data source: the same from Scala, Java and SQL.
df.write.format("tfrecord").save(f"{data}/ex")  # Example records
df.write.format("tfrecord").mode("append").partitionBy("day").option("compression", "gzip").save(
    f"{data}/by_day"
)
ex = spark.read.format("tfrecord").load(f"{data}/ex")  # schema inferred
typed = spark.read.format("tfrecord").schema("label BIGINT, image ARRAY<FLOAT>").load(f"{data}/ex")
df.createOrReplaceTempView("staging")
spark.sql(f"CREATE TABLE ex USING tfrecord LOCATION '{data}/ex'")
spark.sql("INSERT INTO ex BY NAME SELECT * FROM staging")  # columns matched by name
total = spark.sql(f"SELECT count(*) FROM tfrecord.`{data}/ex`").first()[0]  # 4 rows now

# The Python wrappers, with this project's rules (nullability, partition columns kept as typed).
tfs.save_dataframe(df, f"{data}/ex2")  # Example records
tfs.save_dataframe(df, f"{data}/ex3", compression="gzip", partition_by=["day"])
tfs.save_dataframe(seq_df, f"{data}/seq", record_type="SequenceExample")
loaded = tfs.load_dataframe(spark, f"{data}/ex2")  # schema inferred
typed2 = tfs.load_dataframe(spark, f"{data}/ex2", schema="label BIGINT, image ARRAY<FLOAT>")
sampled = tfs.load_dataframe(spark, f"{data}/ex3", sample=0.5, binary_features=["jpeg"])
seq = tfs.load_dataframe(spark, f"{data}/seq", record_type="SequenceExample")
raw = tfs.load_dataframe(spark, f"{data}/ex2", record_type="ByteArray")  # column byte_array
