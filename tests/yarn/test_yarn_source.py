"""The tfrecord data source on YARN: executors in NodeManager containers write and read HDFS."""

from __future__ import annotations

from pyspark.sql import functions as F


def people(spark, n):
    return (spark.range(n).withColumn("name", F.concat(F.lit("p"), F.col("id").cast("string")))
            .withColumn("bucket", (F.col("id") % 3).cast("int")))


def test_the_application_runs_on_yarn_in_client_mode(yarn_spark):
    sc = yarn_spark.sparkContext
    assert sc.master == "yarn"
    assert sc.getConf().get("spark.submit.deployMode") == "client"
    assert sc.applicationId.startswith("application_")


def test_partitioned_write_to_hdfs_and_read_back(yarn, yarn_spark):
    path = f"{yarn.hdfs_url}/source/people"
    people(yarn_spark, 300).repartition(4).write.format("tfrecord") \
        .partitionBy("bucket").mode("overwrite").save(path)
    back = yarn_spark.read.format("tfrecord").load(path)
    assert sorted(back.columns) == ["bucket", "id", "name"]
    assert back.count() == 300
    assert sorted(r.id for r in back.where("bucket = 2").collect()) == list(range(2, 300, 3))


def test_sql_over_a_table_on_hdfs(yarn, yarn_spark):
    location = f"{yarn.hdfs_url}/source/table"
    yarn_spark.sql(f"CREATE TABLE yarn_people (id BIGINT, name STRING, part INT) USING tfrecord "
                   f"PARTITIONED BY (part) LOCATION '{location}'")
    try:
        yarn_spark.sql("INSERT INTO yarn_people VALUES (1, 'one', 0), (2, 'two', 1)")
        rows = yarn_spark.sql("SELECT id, name, part FROM yarn_people ORDER BY id").collect()
        assert [tuple(r) for r in rows] == [(1, "one", 0), (2, "two", 1)]
        assert yarn_spark.sql("SELECT count(*) FROM yarn_people WHERE part = 1").first()[0] == 1
    finally:
        yarn_spark.sql("DROP TABLE yarn_people")


def test_save_records_and_load_records_through_hdfs(yarn, yarn_spark):
    from tfrecord_io.spark import load_records, save_records

    path = f"{yarn.hdfs_url}/source/records"
    data = [b"record-%04d" % i for i in range(500)]
    save_records(yarn_spark.sparkContext.parallelize(data, 5), path, compression="gzip")
    assert sorted(load_records(yarn_spark.sparkContext, path).collect()) == data
