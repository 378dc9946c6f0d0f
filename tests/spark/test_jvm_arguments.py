"""tfrecord_io.spark.jvm: the Python arguments of the RDD and DataFrame functions as the jar
takes them: input paths as Hadoop lists them, a ``compression`` name as a Hadoop codec class
and ``conf`` values as the strings of a Hadoop ``Configuration``. No Spark started
(tests/spark/test_spark_records.py and test_dataframe.py write and read with them)."""

from __future__ import annotations

import pytest

from tfrecord_io.spark.jvm import as_hadoop_conf, codec_class, input_paths

GZIP = "org.apache.hadoop.io.compress.GzipCodec"
ZLIB = "org.apache.hadoop.io.compress.DefaultCodec"


@pytest.mark.parametrize("name", [None, "none", "None", "NONE", ""])
def test_no_compression_has_no_codec(name):
    assert codec_class(name) is None


@pytest.mark.parametrize("name", ["gzip", "GZIP", "Gzip"])
def test_gzip_is_hadoops_gzip_codec(name):
    assert codec_class(name) == GZIP


@pytest.mark.parametrize("name", ["zlib", "ZLIB", "deflate", "DEFLATE", "Deflate"])
def test_zlib_and_deflate_are_hadoops_default_codec(name):
    assert codec_class(name) == ZLIB


@pytest.mark.parametrize("name", ["lz4", "snappy", "gz", "org.apache.hadoop.io.compress.GzipCodec"])
def test_another_compression_name_is_refused_naming_the_ones_taken(name):
    with pytest.raises(ValueError, match=r"compression must be 'gzip', 'zlib' \(or 'deflate'\), "
                                         r"'none' or None, not"):
        codec_class(name)


def test_booleans_are_spelled_as_hadoop_spells_them():
    assert as_hadoop_conf({"tfrecord.output.index": False, "tfrecord.input.index": True}) == {
        "tfrecord.output.index": "false", "tfrecord.input.index": "true"}


def test_numbers_are_written_in_decimal():
    conf = as_hadoop_conf({"tfrecord.max.record.bytes": 1 << 30, "some.fraction": 0.25})
    assert conf == {"tfrecord.max.record.bytes": "1073741824", "some.fraction": "0.25"}


def test_whole_floats_are_written_as_hadoops_getlong_reads_them():
    # "1000000000.0" failed every task reading tfrecord.max.record.bytes (getLong).
    assert as_hadoop_conf({"tfrecord.max.record.bytes": 1e9, "tfrecord.input.buffer.bytes": 64e3,
                           "fraction": 0.25}) == {"tfrecord.max.record.bytes": "1000000000",
                                                  "tfrecord.input.buffer.bytes": "64000",
                                                  "fraction": "0.25"}


def test_strings_are_passed_as_they_are():
    conf = {"tfrecord.input.corrupt.policy": "skip", "tfrecord.output.extension": " .tfr"}
    assert as_hadoop_conf(conf) == conf


def test_no_conf_is_an_empty_one():
    assert as_hadoop_conf(None) == {}


@pytest.mark.parametrize("value", [None, [1, 2], {"a": 1}, b"bytes"])
def test_a_value_hadoop_has_no_form_of_is_refused_naming_its_key(value):
    with pytest.raises(TypeError, match=r"conf\['tfrecord.input.index'\] is .*: Hadoop settings "
                                        "take a string, a bool or a number"):
        as_hadoop_conf({"tfrecord.input.index": value})


def test_a_refused_value_is_never_shown_in_the_message():
    # A secret read from a file as bytes must not reach a log or a traceback.
    with pytest.raises(TypeError, match=r"conf\['fs.s3a.secret.key'\] is a bytes") as refused:
        as_hadoop_conf({"fs.s3a.secret.key": b"wJalrXUtnFEMI"})
    assert "wJalrXUtnFEMI" not in str(refused.value)


def test_a_comma_separated_input_is_cut_outside_braces_only():
    assert input_paths("/a,/b/{x,y},hdfs:///c/{1,{2,3}}") == ["/a", "/b/{x,y}",
                                                             "hdfs:///c/{1,{2,3}}"]


def test_a_list_of_inputs_gives_each_item_as_one_path(tmp_path):
    assert input_paths([tmp_path / "a", "/b/{x,y}"]) == [str(tmp_path / "a"), "/b/{x,y}"]


def test_a_listed_input_with_a_comma_outside_braces_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"'/day=1,2'.*two paths"):
        input_paths(["/a", "/day=1,2"])


def test_no_input_paths_is_refused():
    with pytest.raises(ValueError, match="no input paths"):
        input_paths([])
