"""Session-wide fixtures (real services, started once per test session) and test markers.

The tests are laid out like the package (tests/example/ for tfrecord_io.example, ...), each
directory without ``__init__.py``: test file names are unique across the tree.

Markers are applied here from what a test uses, so that nobody has to remember them:

* ``spark``: it uses the ``spark``, ``sc`` or ``spark_master`` fixture, or its module imports
  pyspark (tests that start Spark applications themselves);
* ``hdfs``: it uses the ``hdfs`` fixture (also through fixtures built on it), or its module
  imports the test HDFS launcher (tests that start their own MiniDFSCluster);
* ``tensorflow``: its module imports TensorFlow;
* ``postgres``: it uses the test PostgreSQL server (the ``postgres`` fixture of tests/postgres,
  also through fixtures built on it);
* ``s3``: it uses the test S3 server (the ``s3`` fixture: moto's, with authentication; also
  through ``s3_env`` and ``s3_bucket``), or its module imports the S3 server's package;
* ``azure``: it uses the test Azure Blob server (the ``azurite`` fixture: Azurite's blob
  service; also through ``azure_container`` and ``azure_env``), or its module imports
  ``tfrecord_io.testing.azurite``;
* ``gcs``: it uses the test GCS server (the ``gcs`` fixture: fake-gcs-server; also through
  ``gcs_bucket`` and ``gcs_env``), or its module imports ``tfrecord_io.testing.gcs``;
* ``connect`` (and ``spark``): it uses the ``connect_spark`` fixture (a Spark Connect client of
  a real Connect server, ``connect_server``, whose executors are JVMs of their own), or is the
  ``connect`` case of a test on ``any_spark`` (each test on a classic session, then on a
  Connect client);
* ``yarn`` / ``standalone`` (and ``spark``, ``hdfs``): it uses the fixtures of tests/yarn or
  tests/standalone (a Spark application on the test YARN, or on a standalone cluster across
  network namespaces). These tests run last, each group with its own Spark application: the
  ``spark`` session is stopped first (one SparkContext per process).

``pytest -m "not spark and not hdfs and not packaging"`` is the fast inner loop; ``make test`` runs
everything.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import types
from dataclasses import dataclass

import pytest

from datafiles import MNIST, MNIST_PNG_LIMIT

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

SPARK_MASTER = os.environ.get("TFRECORD_IO_TEST_MASTER", "local-cluster[2,2,1024]")


_SPARK_FIXTURES = frozenset({"spark", "sc", "spark_master", "connect_server", "connect_spark",
                             "any_spark"})
_HDFS_FIXTURES = frozenset({"hdfs"})
_POSTGRES_FIXTURES = frozenset({"postgres", "images_db", "jdbc"})
_S3_FIXTURES = frozenset({"s3"})
_AZURE_FIXTURES = frozenset({"azurite"})
_GCS_FIXTURES = frozenset({"gcs"})
# Fixture -> marker of the tests on real cluster managers (tests/yarn, tests/standalone).
_CLUSTER_FIXTURES = {"connect_spark": "connect", "connect_server": "connect",
                     "yarn": "yarn", "yarn_spark": "yarn",
                     "standalone": "standalone", "standalone_spark": "standalone"}
# Module -> marker of the tests whose module imports it (or names from it).
_MARKING_IMPORTS = {
    "tensorflow": "tensorflow",
    "pyspark": "spark",
    "tfrecord_io.testing.minihdfs": "hdfs",
    "tfrecord_io.testing.miniyarn": "yarn",
    "tfrecord_io.testing.postgres": "postgres",
    "tfrecord_io.testing.s3": "s3",
    "tfrecord_io.testing.azurite": "azure",
    "tfrecord_io.testing.gcs": "gcs",
    "tfrecord_io.testing.standalone": "standalone",
    "tfrecord_io.testing.connect": "connect",
}


def _imported_markers(module: types.ModuleType | None) -> set[str]:
    """The markers implied by what a test module imports (modules, or names from them)."""
    found: set[str] = set()
    for value in vars(module).values() if module is not None else ():
        if isinstance(value, types.ModuleType):
            origin = value.__name__
        else:
            origin = getattr(value, "__module__", None)
            if not isinstance(origin, str):
                continue
        for prefix, marker in _MARKING_IMPORTS.items():
            if origin == prefix or origin.startswith(prefix + "."):
                found.add(marker)
    return found


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test ``spark``, ``hdfs``, ``postgres``, ``s3``, ``azure``, ``gcs``,
    ``tensorflow``, ``connect``, ``yarn``, ``standalone`` from what it uses; the ``yarn`` and
    ``standalone`` tests go last, grouped."""
    by_module: dict[str, set[str]] = {}
    for item in items:
        module = getattr(item, "module", None)
        key = module.__name__ if module is not None else ""
        if key not in by_module:
            by_module[key] = _imported_markers(module)
        markers = set(by_module[key])
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & _SPARK_FIXTURES:
            markers.add("spark")
        if fixtures & _HDFS_FIXTURES:
            markers.add("hdfs")
        if fixtures & _POSTGRES_FIXTURES:
            markers.add("postgres")
        if fixtures & _S3_FIXTURES:
            markers.add("s3")
        if fixtures & _AZURE_FIXTURES:
            markers.add("azure")
        if fixtures & _GCS_FIXTURES:
            markers.add("gcs")
        markers.update(_CLUSTER_FIXTURES[f] for f in fixtures if f in _CLUSTER_FIXTURES)
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("any_spark") == "connect":
            markers.add("connect")
        if markers & {"yarn", "standalone"}:
            markers.update({"spark", "hdfs"})
        for name in sorted(markers):
            item.add_marker(name)
    # Stable sort: everything else, then the yarn tests, then the standalone ones.
    items.sort(key=lambda i: (i.get_closest_marker("standalone") is not None) * 2
               + (i.get_closest_marker("yarn") is not None))


class _ModuleClock:
    """Ends each test module's progress line with the module's wall time and the session's, so
    that a run's output (CI's log above all) shows where the time went, even when it is cut
    short."""

    def __init__(self) -> None:
        self.session_start = time.monotonic()
        self.module: str | None = None
        self.module_start = self.session_start

    def mark(self, config: pytest.Config, module: str | None) -> None:
        if module == self.module:
            return
        now = time.monotonic()
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if self.module is not None and reporter is not None and reporter.verbosity == 0:
            reporter.write(f" {now - self.module_start:.0f} s"
                           f" (at {(now - self.session_start) / 60:.1f} min)")
        self.module, self.module_start = module, now


_CLOCK = _ModuleClock()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> None:
    _CLOCK.mark(item.config, item.location[0])


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    _CLOCK.mark(session.config, None)


def _machine_state() -> str:
    """Free disk (``/`` and the temporary directory), memory, ``/dev/shm``, processes and the
    five largest of them: what a failure that depends on the machine (a full disk, no memory)
    needs to be told apart from a bug."""
    import shutil
    import tempfile

    lines = []
    for path in dict.fromkeys(("/", tempfile.gettempdir(), "/dev/shm")):
        with contextlib.suppress(OSError):
            usage = shutil.disk_usage(path)
            lines.append(f"{path}: {usage.free / 2**30:.1f} GiB free of {usage.total / 2**30:.1f}")
    with contextlib.suppress(OSError):
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        lines.append("memory: " + ", ".join(f"{k} {int(info[k].split()[0]) // 1024} MiB"
                                            for k in ("MemTotal", "MemAvailable") if k in info))
    sizes = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(f"/proc/{pid}/status") as f:
                rss = next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            if len(command) > 100:  # a JVM's classpath: keep the program and its main class
                command = f"{command[:30]} ... {command[-65:]}"
            sizes.append((rss, pid, command))
    lines.append(f"processes: {len(sizes)}; largest (RSS):")
    lines += [f"  {rss // 1024} MiB pid {pid}: {command}" for rss, pid, command in
              sorted(sizes, reverse=True)[:5]]
    return "\n".join(lines)


class _FailureSnapshots:
    """The machine's state at the first few failures (:func:`_machine_state`), in their reports
    and again at the end of the run."""

    limit = 3

    def __init__(self) -> None:
        self.taken: list[tuple[str, str]] = []


_SNAPSHOTS = _FailureSnapshots()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    outcome = yield
    report = outcome.get_result()
    if report.failed and len(_SNAPSHOTS.taken) < _SNAPSHOTS.limit:
        state = _machine_state()
        _SNAPSHOTS.taken.append((item.nodeid, state))
        report.sections.append(("the machine at this failure", state))


def pytest_terminal_summary(terminalreporter: object) -> None:
    for nodeid, state in _SNAPSHOTS.taken[:1]:
        terminalreporter.write_sep("-", f"the machine at the first failure ({nodeid})")
        terminalreporter.write_line(state)


@pytest.fixture(scope="session")
def spark_master() -> str:
    """The Spark master of the tests (``TFRECORD_IO_TEST_MASTER``, else a local cluster of two
    executor JVMs), for tests that start Spark themselves."""
    return SPARK_MASTER


@pytest.fixture(scope="session")
def event_logs(tmp_path_factory):
    """The directory where the test sessions' Spark applications (the classic one and the
    Connect server's) write their event logs, uncompressed: what a reader of Spark's history
    sees (tests/cluster/test_secrets.py reads them)."""
    return tmp_path_factory.mktemp("eventlogs")


def _event_log_conf(directory) -> dict[str, str]:
    return {"spark.eventLog.enabled": "true", "spark.eventLog.dir": f"file://{directory}",
            "spark.eventLog.compress": "false"}


def _connectors_conf() -> dict[str, str]:
    """The object stores' connectors (``make setup`` fetches them) on the driver's and the
    executors' classpath: Hadoop's S3A and ABFS when they are of the Hadoop that the installed
    pyspark bundles (tests/spark/test_spark_s3.py, test_spark_azure.py), Google's Cloud Storage
    connector (tests/spark/test_spark_gcs.py)."""
    from tfrecord_io.testing.azurite.abfs import find_abfs_classpath
    from tfrecord_io.testing.gcs.connector import find_gcs_connector_classpath
    from tfrecord_io.testing.s3.s3a import find_s3a_classpath

    found = [cp for cp in (find_s3a_classpath(), find_abfs_classpath(),
                           find_gcs_connector_classpath()) if cp]
    if not found:
        return {}
    classpath = os.pathsep.join(found)
    return {"spark.driver.extraClassPath": classpath, "spark.executor.extraClassPath": classpath}


def _test_app_conf() -> dict[str, str]:
    """What the session's local cluster and the Connect server's share: warm cluster nodes
    (each executor imports TensorFlow once, not each node), no console progress bar (Spark
    redraws it five times a second) and JVMs without hsperfdata (its sampler wakes every
    50 ms)."""
    from tfrecord_io.cluster import daemon

    return {
        "spark.task.maxFailures": "4",
        "spark.executor.memory": "1g",
        "spark.python.worker.reuse": "true",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": "-XX:-UsePerfData",
        "spark.executor.extraJavaOptions": "-XX:-UsePerfData",
        **daemon.SPARK_CONF,
    }


@pytest.fixture(scope="session")
def spark(event_logs):
    """A SparkSession on a local cluster: two executor JVMs with their own Python workers,
    with the PostgreSQL JDBC driver (``make setup`` fetches it) in ``spark.jars`` for the tests
    of Spark's JDBC source (tests/postgres), the object stores' connectors on its
    classpath (:func:`_connectors_conf`), writing its event log to :func:`event_logs`."""
    from tfrecord_io import spark as tfs
    from tfrecord_io.testing.postgres.jdbc import find_jdbc_jars

    jdbc_jars = find_jdbc_jars()

    session = tfs.session(
        SPARK_MASTER,
        app_name="tfrecord-io-tests",
        **{
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            **_test_app_conf(),
            # The test HDFS has two DataNodes. Hadoop caches one client per file system, made
            # with the configuration of whichever test reaches it first, so the replication
            # its files get is set here, once, for every test.
            "spark.hadoop.dfs.replication": "2",
            **_event_log_conf(event_logs),
            **_connectors_conf(),
            **({"spark.jars": ",".join(jdbc_jars)} if jdbc_jars else {}),
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    # Every executor's Python daemon imports TensorFlow now (a task on each of the 4 slots),
    # not inside the first cluster.run's reservation_timeout.
    session.sparkContext.parallelize(range(8), 8).map(lambda x: x).collect()
    yield session
    session.stop()


@pytest.fixture(scope="session")
def sc(spark):
    """The SparkContext of :func:`spark`."""
    return spark.sparkContext


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory, event_logs):
    """A real Spark Connect server (``connect_server.url`` is ``sc://127.0.0.1:PORT``): Spark's
    ``SparkConnectServer`` from the installed pyspark (pyspark 3.5 bundles none: there Spark's
    separate ``spark-connect_2.12`` jar, which ``ConnectServer`` finds in ``.tools/``, where
    ``make setup-spark35`` puts it), on the classic session's master (a local cluster of two
    executor JVMs), with the bundled jar, writing its event log to :func:`event_logs`; stopped
    with its whole process tree at the end of the session."""
    from tfrecord_io.spark import REDACTION_REGEX
    from tfrecord_io.testing import connect

    server = connect.ConnectServer(
        tmp_path_factory.mktemp("connect"), master=SPARK_MASTER,
        conf={**_test_app_conf(), "spark.hadoop.dfs.replication": "2",
              **_event_log_conf(event_logs), **_connectors_conf(),
              # as tfs.session() starts applications: object stores' account keys redacted
              "spark.redaction.regex": REDACTION_REGEX},
    )
    try:
        try:
            server.start()
        except connect.ConnectServerError as e:
            pytest.fail(f"the Spark Connect server did not start: {e}", pytrace=False)
        yield server
    finally:
        server.stop()


# pyspark marks the whole process as a Spark Connect client when a remote session starts
# (this variable, which pyspark.sql.functions, pyspark.ml and others consult to build Connect
# columns): here it is set only while a test uses the Connect session, so that the classic
# tests before and after it keep classic columns.
_CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"


@contextlib.contextmanager
def _connect_mode():
    os.environ[_CONNECT_MODE] = "1"
    try:
        yield
    finally:
        os.environ.pop(_CONNECT_MODE, None)


@pytest.fixture(scope="session")
def _connect_session(connect_server):
    # Connect's own builder: pyspark's SparkSession.builder refuses a remote session while a
    # classic one runs in the process, as the classic fixture's may.
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    session = RemoteSparkSession.builder.remote(connect_server.url).getOrCreate()
    # The server's executors' daemons import TensorFlow now (a task on each slot), not inside
    # the first cluster.run's reservation_timeout.
    with _connect_mode():
        session.range(0, 8, 1, 8).mapInPandas(lambda frames: frames, "id long").collect()
    yield session
    with _connect_mode():
        session.stop()


@pytest.fixture
def connect_spark(_connect_session, monkeypatch):
    """A Spark Connect client session of :func:`connect_server` (one for the whole test
    session), with this process in Connect mode for the test's duration."""
    monkeypatch.setenv(_CONNECT_MODE, "1")
    return _connect_session


@pytest.fixture(params=["classic", "connect"])
def any_spark(request):
    """Each test twice: on the classic :func:`spark` session, then on :func:`connect_spark`'s
    Spark Connect client (marked ``connect``)."""
    return request.getfixturevalue("spark" if request.param == "classic" else "connect_spark")


@pytest.fixture(scope="session")
def hdfs(tmp_path_factory):
    """A real HDFS for the session: a MiniDFSCluster (NameNode + 2 DataNodes, replication 2,
    1 MiB blocks) in a child JVM on 127.0.0.1. ``hdfs.url`` is ``hdfs://127.0.0.1:PORT``.

    Its root directory is made world-writable, so the test process and Spark's executors can
    write anywhere in it whatever HDFS user they run as. Never skips: without the JVM
    classpath it fails, saying how to get one.
    """
    from tfrecord_io.testing import minihdfs

    if minihdfs.find_classpath() is None:
        pytest.fail(
            "no classpath for the mini HDFS (.tools/minihdfs.classpath, or "
            f"${minihdfs.CLASSPATH_ENV}): run `make setup`",
            pytrace=False,
        )
    cluster = minihdfs.MiniHdfs(
        tmp_path_factory.mktemp("hdfs"), datanodes=2, replication=2, block_size=1 << 20
    )
    try:
        try:
            cluster.start()
        except minihdfs.MiniHdfsError as e:
            pytest.fail(
                f"the mini HDFS did not start: {e}\n(run `make setup` to rebuild its classpath)",
                pytrace=False,
            )
        import hdfs_native

        # As the superuser (who runs the JVM), whatever HADOOP_USER_NAME says.
        saved = os.environ.pop("HADOOP_USER_NAME", None)
        os.environ["HADOOP_USER_NAME"] = cluster.superuser
        try:
            hdfs_native.Client(cluster.url).set_permission("/", 0o777)
        finally:
            if saved is None:
                os.environ.pop("HADOOP_USER_NAME", None)
            else:
                os.environ["HADOOP_USER_NAME"] = saved
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(params=["hdfs", "webhdfs"])
def hdfs_dir(request, hdfs):
    """A fresh, existing directory on the test HDFS, once as an ``hdfs://`` URL (hdfs-native)
    and once as a ``webhdfs://`` one (WebHDFS): ``/<test module>/<test>-<random>``."""
    import uuid

    from tfrecord_io import fs

    root = hdfs.url if request.param == "hdfs" else hdfs.webhdfs_url
    module = request.module.__name__.rsplit(".", 1)[-1]
    url = f"{root}/{module}/{request.node.name.split('[')[0]}-{uuid.uuid4().hex[:8]}"
    fs.makedirs(url)
    return url


@pytest.fixture(scope="session")
def mnist_png_tree(tmp_path_factory):
    """The first :data:`MNIST_PNG_LIMIT` images of the real MNIST test set as a class-per-folder
    tree of grayscale PNG files, ``TREE/<digit>/NNNNN.png`` (NNNNN the index in the set), written
    once per session by :func:`tfrecord_io.datasets.images.write_png_folders`. Read only: copy
    it to change it."""
    from tfrecord_io.datasets import images

    if not os.path.isfile(os.path.join(MNIST, "t10k-images-idx3-ubyte.gz")):
        pytest.fail(f"the MNIST test set is missing from {os.path.abspath(MNIST)}: these "
                    "tests need the real data at ../shared/data/mnist", pytrace=False)
    tree = tmp_path_factory.mktemp("mnist-png") / "tree"
    images.write_png_folders(MNIST, tree, limit=MNIST_PNG_LIMIT)
    return tree


def _serve(server, error_type: type[Exception], what: str):
    """Yields *server* started, for a session fixture, and stops it at the end, also after a
    failure. A server that cannot start fails the tests that need it (never a skip), with
    *what* and why."""
    try:
        try:
            server.start()
        except error_type as e:
            pytest.fail(f"{what}: {e}", pytrace=False)
        yield server
    finally:
        server.stop()


def _point_at(server, own_prefixes: tuple[str, ...], monkeypatch):
    """Sets *server*'s client settings in ``os.environ`` for the test (child processes get
    them too), after removing every variable of the developer's environment that starts with
    one of *own_prefixes*; returns *server*."""
    for name in list(os.environ):
        if name.startswith(own_prefixes):
            monkeypatch.delenv(name)
    for name, value in server.environment().items():
        monkeypatch.setenv(name, value)
    return server


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server for the session (:class:`tfrecord_io.testing.postgres.Postgres`:
    127.0.0.1 only, as the ``postgres`` OS user when root), removed at the end, also after a
    failure. Never skips: without PostgreSQL it fails, saying how to get it."""
    from tfrecord_io.testing import postgres as pg

    yield from _serve(pg.Postgres(), pg.PostgresError, "the test PostgreSQL did not start")


@pytest.fixture(scope="session")
def s3():
    """An S3-compatible server for the session (:class:`tfrecord_io.testing.s3.S3Server`: moto's
    standalone server on 127.0.0.1, every request signed with the access key it makes at start),
    removed at the end, also after a failure. Never skips: without moto it fails, saying how to
    get it. Tests reach it through :func:`s3_env`."""
    from tfrecord_io.testing import s3 as s3_server

    yield from _serve(s3_server.S3Server(), s3_server.S3ServerError,
                      "the test S3 server did not start")


@pytest.fixture(scope="session")
def s3_bucket(s3):
    """The name of a bucket of :func:`s3` for the session's tests (each test works under a
    prefix of its own)."""
    name = "tfrecord-io-tests"
    s3.create_bucket(name)
    return name


@pytest.fixture
def s3_env(s3, s3_bucket, monkeypatch):
    """:func:`s3`, with the standard AWS settings that point at it (endpoint, key, secret,
    region) in ``os.environ`` for the test, so that child processes have them too; any other
    ``AWS_*`` or ``TFRECORD_IO_S3_*`` setting of the developer's environment is removed."""
    return _point_at(s3, ("AWS_", "TFRECORD_IO_S3_"), monkeypatch)


@pytest.fixture(scope="session")
def azurite():
    """An Azure Blob server for the session (:class:`tfrecord_io.testing.azurite.AzuriteServer`:
    Azurite's blob service on 127.0.0.1, its well-known account, every request signed with its
    key), removed at the end, also after a failure. Never skips: without Azurite (``make
    setup``) it fails, saying how to get it. Tests reach it through :func:`azure_env`."""
    from tfrecord_io.testing import azurite as azurite_server

    yield from _serve(azurite_server.AzuriteServer(), azurite_server.AzuriteError,
                      "the test Azure Blob server did not start")


@pytest.fixture(scope="session")
def azure_container(azurite):
    """The name of a container of :func:`azurite` for the session's tests (each test works
    under a prefix of its own)."""
    name = "tfrecord-io-tests"
    azurite.create_container(name)
    return name


@pytest.fixture
def azure_env(azurite, azure_container, monkeypatch):
    """:func:`azurite`, with the settings that point at it (``AZURE_STORAGE_ACCOUNT_NAME``,
    ``AZURE_STORAGE_ACCOUNT_KEY``, ``AZURE_STORAGE_BLOB_ENDPOINT``) in ``os.environ`` for the
    test, so that child processes have them too; any other ``AZURE_*`` or ``TFRECORD_IO_AZURE_*``
    setting of the developer's environment is removed."""
    return _point_at(azurite, ("AZURE_", "TFRECORD_IO_AZURE_"), monkeypatch)


@pytest.fixture(scope="session")
def gcs():
    """A Google Cloud Storage server for the session (:class:`tfrecord_io.testing.gcs.GcsServer`:
    fake-gcs-server on 127.0.0.1, in memory, no authentication), removed at the end, also after a
    failure. Never skips: without fake-gcs-server (``make setup``) it fails, saying how to get
    it. Tests reach it through :func:`gcs_env`."""
    from tfrecord_io.testing import gcs as gcs_server

    yield from _serve(gcs_server.GcsServer(), gcs_server.GcsServerError,
                      "the test GCS server did not start")


@pytest.fixture(scope="session")
def gcs_bucket(gcs):
    """The name of a bucket of :func:`gcs` for the session's tests (each test works under a
    prefix of its own)."""
    name = "tfrecord-io-tests"
    gcs.create_bucket(name)
    return name


@pytest.fixture
def gcs_env(gcs, gcs_bucket, monkeypatch):
    """:func:`gcs`, with ``STORAGE_EMULATOR_HOST`` pointing at it in ``os.environ`` for the
    test, so that child processes have it too; the developer's Google settings
    (``GOOGLE_*``, ``CLOUDSDK_*``, ``TFRECORD_IO_GCS_*``: credentials, project) are removed."""
    return _point_at(gcs, ("GOOGLE_", "CLOUDSDK_", "STORAGE_EMULATOR_HOST", "TFRECORD_IO_GCS_"),
                     monkeypatch)


@dataclass(frozen=True)
class ImagesDb:
    """The loaded test database: the server, and the MNIST test set whose images have ids
    1..N in order (``id`` k holds ``images[k - 1]``)."""

    server: object
    images: object
    labels: object

    def __len__(self) -> int:
        return int(self.labels.shape[0])


@pytest.fixture(scope="session")
def images_db(postgres):
    """The table ``images`` of :func:`postgres` holding the whole MNIST test set (10,000
    images) as PNG files, ids 1..10000 in the set's order."""
    from tfrecord_io.datasets import mnist
    from tfrecord_io.testing import postgres as pg

    (split,) = [s for s in mnist.load(MNIST) if s.name == "test"]
    pg.create_images_table(postgres)
    assert pg.load_images(postgres, pg.mnist_png_rows(split)) == len(split)
    return ImagesDb(postgres, split.images, split.labels)


@pytest.fixture(scope="session")
def jdbc(images_db):
    """The options of Spark's JDBC source for the test database (``url``, ``user``,
    ``driver``); the driver's jars are in the session's ``spark.jars`` (see :func:`spark`)."""
    from tfrecord_io.testing import postgres as pg

    if pg.find_jdbc_jars() is None:
        pytest.fail(f"no PostgreSQL JDBC driver (.tools/postgres-jdbc.classpath or "
                    f"${pg.JDBC_ENV}): run `make setup`", pytrace=False)
    return {"url": images_db.server.jdbc_url, "user": images_db.server.user,
            "driver": pg.DRIVER_CLASS}
