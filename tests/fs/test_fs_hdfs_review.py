"""The HDFS backend's Hadoop configuration as Hadoop reads it (``${var}`` substitution, final
properties, XInclude), HA nameservices over WebHDFS, and file names that need escaping in
WebHDFS URLs, against the session's test HDFS."""

from __future__ import annotations

import socket
import tracemalloc
import uuid

import pytest

from tfrecord_io import fs
from tfrecord_io.errors import HdfsError
from tfrecord_io.fs import hdfs as fs_hdfs
from tfrecord_io.fs.hdfs import config as hdfs_config
from tfrecord_io.fs.hdfs import urls as hdfs_urls

pytestmark = pytest.mark.usefixtures("no_hadoop_settings")

MiB = 1 << 20


@pytest.fixture
def base(hdfs_dir):
    """A fresh directory URL, once through hdfs:// and once through webhdfs://."""
    return hdfs_dir


def _site(path, props: dict[str, str], final: tuple[str, ...] = (), extra: str = "") -> None:
    rows = "".join(
        f"<property><name>{k}</name><value>{v}</value>"
        + ("<final>true</final>" if k in final else "")
        + "</property>"
        for k, v in props.items()
    )
    path.write_text(
        "<?xml version='1.0'?>"
        "<configuration xmlns:xi='http://www.w3.org/2001/XInclude'>"
        f"{rows}{extra}</configuration>"
    )


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize(
    "name", ["a b", "100%", "a%20b", "x#y", "q?r", "ünïcødé", "semi;colon", "amp&op=DELETE"]
)
def test_names_needing_escapes_round_trip(base, name):
    url = f"{base}/{name}"
    with fs.open(url, "wb") as f:
        f.write(b"data")
    with fs.open(url) as f:
        assert f.read() == b"data"
    assert fs.ls(base) == [url]
    assert fs.stat(url).size == 4


# -- Hadoop configuration -----------------------------------------------------------------------


@pytest.mark.parametrize("client", ["native", "webhdfs"])
def test_a_default_fs_made_of_other_properties_is_substituted(hdfs, tmp_path, monkeypatch, client):
    host, port = hdfs.url.split("://")[1].rsplit(":", 1)
    _site(
        tmp_path / "core-site.xml",
        {"nn.host": host, "nn.port": port, "fs.defaultFS": "hdfs://${nn.host}:${nn.port}"},
    )
    web_port = hdfs.webhdfs_url.rsplit(":", 1)[1]
    _site(tmp_path / "hdfs-site.xml", {"dfs.namenode.http-address": f"${{nn.host}}:{web_port}"})
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    monkeypatch.setenv(fs_hdfs.CLIENT_ENV, client)
    name = f"/review/subst-{uuid.uuid4().hex[:8]}"
    with fs.open(f"{hdfs.url}{name}", "wb") as f:
        f.write(b"found")
    assert fs_hdfs.default_fs() == hdfs.url
    with fs.open(f"hdfs://{name}") as f:
        assert f.read() == b"found"


def test_site_values_substitute_environment_variables_and_other_site_files(tmp_path, monkeypatch):
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    monkeypatch.setenv("NN_HOST", "nn-prod.example.com")
    _site(tmp_path / "core-site.xml", {"fs.defaultFS": "hdfs://${env.NN_HOST}:${nn.rpc.port}"})
    _site(
        tmp_path / "hdfs-site.xml",
        {"nn.rpc.port": "8020", "undefined": "${no.such.property}/x"},
    )
    assert fs_hdfs.default_fs() == "hdfs://nn-prod.example.com:8020"
    assert hdfs_config.read_site("hdfs-site.xml")["undefined"] == "${no.such.property}/x"


def test_a_final_property_keeps_its_first_value(tmp_path, monkeypatch):
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    rows = (
        "<property><name>fs.defaultFS</name><value>hdfs://nn-a:8020</value>"
        "<final>true</final></property>"
        "<property><name>fs.defaultFS</name><value>hdfs://nn-b:8020</value></property>"
    )
    (tmp_path / "core-site.xml").write_text(f"<configuration>{rows}</configuration>")
    assert fs_hdfs.default_fs() == "hdfs://nn-a:8020"


def test_properties_of_an_xincluded_file_are_read(tmp_path, monkeypatch):
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    _site(tmp_path / "cluster.xml", {"fs.defaultFS": "hdfs://nn-included:8020"})
    _site(
        tmp_path / "core-site.xml",
        {"hadoop.tmp.dir": "/tmp/x"},
        extra="<xi:include href='cluster.xml'/>"
        "<xi:include href='absent.xml'><xi:fallback/></xi:include>",
    )
    assert fs_hdfs.default_fs() == "hdfs://nn-included:8020"


def test_a_missing_xincluded_file_without_fallback_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    _site(tmp_path / "core-site.xml", {}, extra="<xi:include href='absent.xml'/>")
    with pytest.raises(HdfsError, match=r"absent\.xml"):
        fs_hdfs.default_fs()


# -- HA nameservices over WebHDFS ---------------------------------------------------------------


def _ha_conf(hdfs, tmp_path, monkeypatch) -> None:
    """An HA nameservice ``mycluster`` whose first NameNode is down and second is the test
    HDFS's."""
    dead = f"127.0.0.1:{_closed_port()}"
    _site(tmp_path / "core-site.xml", {"fs.defaultFS": "hdfs://mycluster"})
    _site(
        tmp_path / "hdfs-site.xml",
        {
            "dfs.nameservices": "mycluster",
            "dfs.ha.namenodes.mycluster": "nn1,nn2",
            "dfs.namenode.rpc-address.mycluster.nn1": dead,
            "dfs.namenode.rpc-address.mycluster.nn2": hdfs.url.split("://")[1],
            "dfs.namenode.http-address.mycluster.nn1": dead,
            "dfs.namenode.http-address.mycluster.nn2": hdfs.webhdfs_url.split("://")[1],
            "dfs.client.failover.proxy.provider.mycluster": (
                "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider"
            ),
        },
    )
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))


@pytest.mark.parametrize("client", ["native", "webhdfs"])
def test_hdfs_urls_of_an_ha_nameservice_reach_its_live_namenode(
    hdfs, tmp_path, monkeypatch, client
):
    _ha_conf(hdfs, tmp_path, monkeypatch)
    monkeypatch.setenv(fs_hdfs.CLIENT_ENV, client)
    name = f"/review/ha-{uuid.uuid4().hex[:8]}"
    with fs.open(f"hdfs://mycluster{name}", "wb") as f:
        f.write(b"highly available")
    with fs.open(f"hdfs://{name}") as f:
        assert f.read() == b"highly available"
    assert fs.ls(f"hdfs://mycluster{name}") == [f"hdfs://mycluster{name}"]


def test_webhdfs_urls_of_an_ha_nameservice_reach_its_live_namenode(hdfs, tmp_path, monkeypatch):
    _ha_conf(hdfs, tmp_path, monkeypatch)
    name = f"/review/ha-web-{uuid.uuid4().hex[:8]}"
    with fs.open(f"webhdfs://mycluster{name}", "wb") as f:
        f.write(b"over http")
    with fs.open(f"{hdfs.url}{name}") as f:
        assert f.read() == b"over http"


def test_the_native_client_takes_namenode_addresses_with_variables_substituted(
    hdfs, tmp_path, monkeypatch
):
    host, port = hdfs.url.split("://")[1].rsplit(":", 1)
    _site(tmp_path / "core-site.xml", {"nn.host": host})
    _site(
        tmp_path / "hdfs-site.xml",
        {
            "dfs.nameservices": "mycluster",
            "dfs.ha.namenodes.mycluster": "nn1",
            "dfs.namenode.rpc-address.mycluster.nn1": f"${{nn.host}}:{port}",
            "dfs.client.failover.proxy.provider.mycluster": (
                "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider"
            ),
        },
    )
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    name = f"/review/ha-subst-{uuid.uuid4().hex[:8]}"
    with fs.open(f"hdfs://mycluster{name}", "wb") as f:
        f.write(b"substituted")
    with fs.open(f"{hdfs.url}{name}") as f:
        assert f.read() == b"substituted"


def test_a_webhdfs_url_without_port_goes_to_the_configured_http_port(hdfs, tmp_path, monkeypatch):
    web_port = hdfs.webhdfs_url.rsplit(":", 1)[1]
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    _site(tmp_path / "hdfs-site.xml", {"dfs.namenode.http-address": f"0.0.0.0:{web_port}"})
    name = f"/review/no-port-{uuid.uuid4().hex[:8]}"
    with fs.open(f"webhdfs://127.0.0.1{name}", "wb") as f:
        f.write(b"port found")
    with fs.open(f"{hdfs.url}{name}") as f:
        assert f.read() == b"port found"


def test_a_webhdfs_url_without_port_and_configuration_goes_to_port_9870():
    assert hdfs_urls.webhdfs_address("nn-prod") == "nn-prod:9870"
    assert hdfs_urls.webhdfs_address("nn-prod:50070") == "nn-prod:50070"


def test_the_http_address_of_a_default_fs_written_with_a_trailing_slash_is_used(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    _site(tmp_path / "core-site.xml", {"fs.defaultFS": "hdfs://nn-prod:8020/"})
    _site(tmp_path / "hdfs-site.xml", {"dfs.namenode.http-address": "nn-prod-web:50070"})
    assert hdfs_urls.webhdfs_address_for_rpc("nn-prod:8020") == "nn-prod-web:50070"


# -- WebHDFS writes -----------------------------------------------------------------------------


def test_a_big_webhdfs_write_is_not_held_in_memory(hdfs):
    url = f"{hdfs.webhdfs_url}/review/big-write-{uuid.uuid4().hex[:8]}"
    piece = bytes(range(256)) * 256  # 64 KiB: gathered into new 1 MiB buffers by the writer
    tracemalloc.start()
    try:
        with fs.open(url, "wb") as f:
            for _ in range(160 * 16):
                f.write(piece)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40 * MiB, f"{peak / MiB:.0f} MiB held writing 160 MiB"
    assert fs.stat(url).size == 160 * MiB
    with fs.open(url) as f:
        f.seek(100 * MiB + 5)
        assert f.read(3) == piece[5:8]


def test_a_webhdfs_write_the_datanode_refuses_fails_before_close(hdfs, monkeypatch):
    private = f"/review/private-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("HADOOP_USER_NAME", hdfs.superuser)
    fs.makedirs(f"{hdfs.url}{private}")
    import hdfs_native

    hdfs_native.Client(hdfs.url).set_permission(private, 0o755)
    monkeypatch.setenv("HADOOP_USER_NAME", "mallory")
    url = f"{hdfs.webhdfs_url}{private}/f"
    accepted = 0
    with pytest.raises(PermissionError) as err, fs.open(url, "wb") as f:
        for _ in range(256):
            f.write(bytes(MiB))
            accepted += 1
    assert accepted < 64, f"{accepted} MiB accepted after the DataNode refused the file"
    assert "'mallory'" in str(err.value) and private in str(err.value)
