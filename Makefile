# tfrecord-io developer commands. On a fresh machine (Python >= 3.10, a JDK >= 11, make, curl, g++,
# npm, Go >= 1.26):
#
#   make setup    install everything: .venv with pyspark, TensorFlow and the package (editable,
#                 test extras, moto's S3 server among them, jar built against the venv's
#                 pyspark, the TensorFlow plugin against its TensorFlow), the sbt launcher, the
#                 JVM dependencies,
#                 .tools/minihdfs.classpath for the test HDFS, the PostgreSQL JDBC driver
#                 (.tools/postgres-jdbc.classpath), Hadoop's S3A connector
#                 (.tools/hadoop-aws.classpath), Hadoop's ABFS connector
#                 (.tools/hadoop-azure.classpath), Google's Cloud Storage connector
#                 (.tools/gcs-connector.classpath), PostgreSQL itself, .venv-spark35 (pyspark 3.5,
#                 the package with the very same jar, not rebuilt, the Connect client) with Spark
#                 3.5's Connect server jar (.tools/spark-connect_2.12-*.jar), and the environment YARN
#                 applications ship to their containers: .venv-ship (TensorFlow and the package
#                 from a wheel, no pyspark) packed by venv-pack into .tools/ship-env.tar, and the
#                 object-store emulators of the tests (setup-emulators; needs npm and go):
#                 Azurite (Azure Blob, from npm, into .tools/azurite) and fake-gcs-server (GCS,
#                 built by `go install` into .tools/bin)
#   make test     run every test: JUnit (bin/sbt core/test, with ArchUnit's package order),
#                 pytest (which also builds the sdist and wheel and tests the wheel in a fresh
#                 venv without javac or g++, tests/packaging; and checks the import contracts
#                 and ruff, tests/architecture), then on pyspark 3.5 (test-spark35) what
#                 depends on Spark's version: the data source, the DataFrame functions,
#                 ml.predict, and their Connect cases on Spark 3.5's Connect server
#
# tests/yarn and tests/standalone (markers yarn, standalone) start real cluster managers; the
# standalone ones need root and iproute2 (`ip`), for network namespaces. tests/postgres and the
# docs' database snippets start a PostgreSQL server (Debian's package, which setup-system installs).
# Tests marked azure and gcs run against the emulators that setup-emulators installs
# (tfrecord_io.testing.azurite, tfrecord_io.testing.gcs), started once per test session.
# Tests marked connect run on a Spark Connect client of a real Connect server
# (tfrecord_io.testing.connect), with the classic tests they mirror; on pyspark 3.5 the server is
# the separate jar that setup-spark35 fetches.
# Fast inner loop (no Spark, no HDFS; markers applied by tests/conftest.py):
#   .venv/bin/python -m pytest -m "not spark and not hdfs and not packaging"
#
# Other targets: jar (rebuild tfrecord_io/jars/tfrecord-io.jar), tf-plugin (rebuild TensorFlow's
# hdfs:// plugin), dist (sdist and wheel into dist/), publish-m2 (the Maven artifact into
# ~/.m2), docs (the documentation site into site/: mkdocs build --strict; tests/docs builds it
# too), test-jvm, test-python, test-spark35, lint (ruff and the import contracts alone), bench,
# hdfs (start the test HDFS by hand), yarn (the test YARN), postgres (the test PostgreSQL with the
# MNIST images by hand), connect (a Spark Connect server with the jar on 127.0.0.1:15002), s3 (the
# test S3 server, moto's, with a bucket `data`; prints the AWS_* settings to export), azurite
# (the test Azure Blob server, with a container `data`; prints the AZURE_STORAGE_* settings),
# gcs (the test GCS server, with a bucket `data`; prints STORAGE_EMULATOR_HOST), clean,
# distclean.
# Knobs: PYTHON=python3.11, PYSPARK='pyspark==4.3.0', SPARK35_VERSION=3.5.7 (pyspark 3.5 and its
# Connect server), AZURITE_VERSION=3.37.0, FAKE_GCS_SERVER_VERSION=v1.56.1,
# PYTEST_ARGS='-k name -x', PIP_QUIET=.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check --no-input
PIP_QUIET ?= -q
# The environments are filled by uv (bootstrapped into $(VENV) by its pip): it downloads in
# parallel and links each file from its cache (~/.cache/uv, UV_CACHE_DIR) instead of unpacking
# TensorFlow's wheels again for every environment, which made pip take most of the set-up time.
UV := $(VENV)/bin/uv
UV_PIP = $(UV) pip install $(PIP_QUIET) --python
# The pyspark that the jar is compiled against and the tests run on. Its bundled Hadoop must be
# the version build.sbt compiles and tests against (val hadoopVersion).
PYSPARK ?= pyspark==4.3.0
# Installed before the package too: setup.py compiles the TensorFlow hdfs:// plugin against it.
TENSORFLOW ?= tensorflow-cpu==2.21.*
# The second Spark line the same jar is tested on (Scala 2.12), in its own environment, with
# Spark 3.5's Connect server: pyspark 3.5 does not bundle it, Maven Central publishes it as
# org.apache.spark:spark-connect_2.12 of each version, and the server must be of the client's
# very version. Pinned to the newest 3.5 whose spark-connect_2.12 jar the registry serves here
# (3.5.8 and 3.5.9 it does not).
SPARK35_VERSION ?= 3.5.7
PYSPARK35 ?= pyspark==$(SPARK35_VERSION)
VENV35 ?= .venv-spark35
# The published jar is shaded with its gRPC, protobuf and Guava: on its own beside pyspark's jars.
CONNECT35_JAR := .tools/spark-connect_2.12-$(SPARK35_VERSION).jar
PY35 := $(VENV35)/bin/python
# The environment that YARN applications ship to their containers (spark.archives): a plain venv
# with the package installed from a wheel, TensorFlow and what executors import, no pyspark.
SHIP_VENV ?= .venv-ship
SHIP_PY := $(SHIP_VENV)/bin/python
SHIP_ENV := .tools/ship-env.tar
SHIP_WHEELS := .tools/ship-wheel
SBT := bin/sbt
PYTEST_ARGS ?=
JAR := tfrecord_io/jars/tfrecord-io.jar
TF_PLUGIN := tfrecord_io/_native/libtfrecord_io_tf_filesystem.so
JAVA_MAIN := $(shell find jvm/src/main -type f 2>/dev/null)
MINIHDFS_CP := .tools/minihdfs.classpath
MINIHDFS_SRC := $(shell find jvm/minihdfs/src -type f 2>/dev/null)
MINIYARN_CP := .tools/miniyarn.classpath
MINIYARN_SRC := $(shell find jvm/miniyarn/src -type f 2>/dev/null)
POSTGRES_JDBC_CP := .tools/postgres-jdbc.classpath
HADOOP_AWS_CP := .tools/hadoop-aws.classpath
HADOOP_AZURE_CP := .tools/hadoop-azure.classpath
GCS_CONNECTOR_CP := .tools/gcs-connector.classpath
# The tests' object-store emulators (tfrecord_io.testing.azurite, tfrecord_io.testing.gcs find
# them here). Azurite: Microsoft's Azure Storage emulator, an npm package, installed with its
# dependencies into a directory of its own (never globally). fake-gcs-server: a Go module, built
# from the Go module proxy by `go install` (v1.56.1 needs Go >= 1.26).
AZURITE_VERSION ?= 3.37.0
AZURITE_DIR := .tools/azurite
AZURITE_BIN := $(AZURITE_DIR)/node_modules/.bin/azurite-blob
FAKE_GCS_SERVER_VERSION ?= v1.56.1
FAKE_GCS_SERVER_BIN := .tools/bin/fake-gcs-server

# Spark's Python workers must run in the venv too, not in whatever python3 is on PATH.
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: help setup setup-steps setup-system setup-python setup-emulators setup-azurite setup-fake-gcs-server \
  setup-jvm setup-spark35 setup-ship jar tf-plugin dist publish-m2 docs test \
  test-jvm test-python test-spark35 lint bench hdfs yarn postgres connect s3 azurite gcs clean \
  distclean

help:
	@sed -n '1,/^$$/p' $(firstword $(MAKEFILE_LIST)) | sed 's/^# \{0,1\}//'

# ---------------------------------------------------------------------------------------------
# setup

# The steps run two at a time where they do not depend on each other (a sub-make with -j2): the
# emulators' download and build (fake-gcs-server compiles for minutes) beside the Python
# environments' downloads. Each step's output is printed whole when it ends.
# uv's cache then drops what no environment can use again: pyspark comes only as a source
# distribution, which uv builds anew on each set-up (a 1.4 GB copy each time that fills the disk
# of a machine that sets up many checkouts).
setup:
	@$(MAKE) --no-print-directory -j2 --output-sync=target setup-steps
	@$(UV) cache prune --quiet
	@echo "make setup: done"

setup-steps: setup-system setup-python setup-emulators setup-jvm setup-spark35 setup-ship

# From Debian's packages if missing: Maven (`mvn`: the test HDFS's classpath, Spark 3.5's
# Connect server); iproute2 (`ip`) for the standalone tests' network namespaces; PostgreSQL (initdb, postgres) for the test database, which the tests start
# themselves: the package is told not to create and start a cluster of its own.
setup-system:
	@command -v mvn >/dev/null || { apt-get update -q && apt-get install -y -q maven; }
	@command -v ip >/dev/null || { apt-get update -q && apt-get install -y -q iproute2; }
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || { \
	  mkdir -p /etc/postgresql-common/createcluster.d && \
	  echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.d/tfrecord-io.conf && \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql; }

$(PY):
	$(PYTHON) -m venv $(VENV)

setup-python: setup-system $(PY)
	$(PIP) install $(PIP_QUIET) 'uv>=0.9'
	$(UV_PIP) $(PY) 'pip>=24' 'setuptools>=77' wheel
	$(UV_PIP) $(PY) '$(PYSPARK)' '$(TENSORFLOW)' 'tf-keras==2.21.*'
	$(UV_PIP) $(PY) --no-build-isolation -e '.[test,connect]'
	@test -s $(JAR) || { echo "make setup: $(JAR) was not built" >&2; exit 1; }
	@test -s $(TF_PLUGIN) || { echo "make setup: $(TF_PLUGIN) was not built" >&2; exit 1; }
	@$(PY) -c 'import pyspark, sys; print("make setup: python", sys.version.split()[0], "pyspark", pyspark.__version__, "jar $(JAR)")'

# The tests' object-store emulators, each installed once: skipped when the pinned version is
# there already (a new version replaces it).
setup-emulators: setup-azurite setup-fake-gcs-server

# Azurite from npm into $(AZURITE_DIR) (its package.json pins the exact version); no install
# scripts run (Azurite has none; one of its dependencies' only checks versions).
setup-azurite:
	@have=$$(node -p 'require("$(abspath $(AZURITE_DIR))/node_modules/azurite/package.json").version' \
	  2>/dev/null || true); \
	if [ "$$have" = "$(AZURITE_VERSION)" ] && [ -x $(AZURITE_BIN) ]; then \
	  echo "make setup: Azurite $$have in $(AZURITE_DIR)"; \
	else \
	  command -v npm >/dev/null || { echo "make setup: npm (Node.js) is needed to install Azurite" >&2; exit 1; }; \
	  mkdir -p $(AZURITE_DIR); \
	  npm install --prefix $(AZURITE_DIR) --save-exact --ignore-scripts --no-audit --no-fund \
	    --loglevel=error azurite@$(AZURITE_VERSION); \
	  test -x $(AZURITE_BIN); \
	  echo "make setup: Azurite $(AZURITE_VERSION) in $(AZURITE_DIR)"; \
	fi

# fake-gcs-server built from its module by `go install` into .tools/bin; the version is read
# back from the binary's build information.
setup-fake-gcs-server:
	@have=$$(go version -m $(FAKE_GCS_SERVER_BIN) 2>/dev/null | awk '$$1 == "mod" { print $$3 }' \
	  || true); \
	if [ "$$have" = "$(FAKE_GCS_SERVER_VERSION)" ]; then \
	  echo "make setup: fake-gcs-server $$have in $(FAKE_GCS_SERVER_BIN)"; \
	else \
	  command -v go >/dev/null || { echo "make setup: go is needed to build fake-gcs-server" >&2; exit 1; }; \
	  GOBIN=$(abspath $(dir $(FAKE_GCS_SERVER_BIN))) \
	    go install github.com/fsouza/fake-gcs-server@$(FAKE_GCS_SERVER_VERSION); \
	  test -x $(FAKE_GCS_SERVER_BIN); \
	  echo "make setup: fake-gcs-server $(FAKE_GCS_SERVER_VERSION) in $(FAKE_GCS_SERVER_BIN)"; \
	fi

$(PY35):
	$(PYTHON) -m venv $(VENV35)

# pyspark 3.5 (Scala 2.12) with the package installed editable from this checkout, taking the
# jar and the plugin that setup-python built (TFRECORD_IO_JAR, TFRECORD_IO_TF_PLUGIN: setup.py
# copies nothing onto itself and compiles nothing): one jar, two Spark lines. Also Spark 3.5's
# Connect server jar ($(CONNECT35_JAR), where tfrecord_io.testing.connect finds it) and the
# Connect client's dependencies by name: pyspark 3.5's own `connect` extra pins numpy<2, which
# TensorFlow 2.21 does not take (pandas and pyarrow come with the test extra).
setup-spark35: setup-python $(CONNECT35_JAR) | $(PY35)
	$(UV_PIP) $(PY35) 'setuptools>=77' wheel
	$(UV_PIP) $(PY35) '$(PYSPARK35)' '$(TENSORFLOW)' 'tf-keras==2.21.*' \
	  'grpcio>=1.56' 'grpcio-status>=1.56' 'googleapis-common-protos>=1.56.4'
	TFRECORD_IO_JAR=$(abspath $(JAR)) TFRECORD_IO_TF_PLUGIN=$(abspath $(TF_PLUGIN)) \
	  $(UV_PIP) $(PY35) --no-build-isolation -e '.[test]'
	@$(PY35) -c 'import pyspark, sys; v = pyspark.__version__; assert v == "$(SPARK35_VERSION)", f"pyspark {v} in $(VENV35), but the Connect server jar is $(CONNECT35_JAR): set SPARK35_VERSION, not PYSPARK35"; print("make setup: $(VENV35): python", sys.version.split()[0], "pyspark", v, "jar $(JAR), Connect server $(CONNECT35_JAR)")'

# Spark 3.5's Connect server, of the version the 3.5 environment has (a new version is a new
# file), fetched by Maven (which checks the registry's checksums) from Maven Central.
$(CONNECT35_JAR): | setup-system
	mkdir -p $(@D)
	mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
	  -Dartifact=org.apache.spark:spark-connect_2.12:$(SPARK35_VERSION) \
	  -DoutputDirectory=$(abspath $(@D)) -Dmdep.overWriteReleases=true
	test -s $@

# The environment shipped with YARN applications, $(SHIP_ENV): a venv made from the same
# $(PYTHON), with the package (a wheel of this checkout with the jar and the plugin that
# setup-python built), the TensorFlow runtime, TensorBoard and pandas (pandas UDFs), and
# tf-keras without its dependency on the `tensorflow` distribution (tensorflow-cpu is the same
# module); no pyspark: Spark on YARN ships its own pyspark.zip and py4j to the containers.
# Packed by venv-pack as an uncompressed tar: on one machine that packs and unpacks in seconds,
# where gzip's level 1 takes half a minute each way. TensorFlow's C++ headers (287 MB) stay out:
# they compile extensions, executors do not; so do the symbol tables of its two big libraries
# (names for debuggers, 245 MB; `strip` writes new copies, uv's cache keeps its own). docs/deploying.md shows these commands.
# After setup-spark35: both run setup.py in this checkout.
setup-ship: setup-python setup-spark35
	rm -rf $(SHIP_VENV) $(SHIP_WHEELS)
	TFRECORD_IO_JAR=$(abspath $(JAR)) TFRECORD_IO_TF_PLUGIN=$(abspath $(TF_PLUGIN)) \
	  $(PIP) wheel $(PIP_QUIET) --no-deps --no-build-isolation --wheel-dir $(SHIP_WHEELS) .
	$(PYTHON) -m venv $(SHIP_VENV)
	$(UV_PIP) $(SHIP_PY) '$(TENSORFLOW)' 'tensorboard==2.21.*' 'pandas<3' \
	  $(SHIP_WHEELS)/tfrecord_io-*.whl
	$(UV_PIP) $(SHIP_PY) --no-deps 'tf-keras==2.21.*'
	for lib in $(SHIP_VENV)/lib/python*/site-packages/tensorflow/libtensorflow*.so.2; do \
	  strip --strip-unneeded -o "$$lib.stripped" "$$lib" && mv -f "$$lib.stripped" "$$lib"; done
	$(VENV)/bin/venv-pack --quiet --force --prefix $(SHIP_VENV) --output $(SHIP_ENV) \
	  --exclude 'lib/python*/site-packages/tensorflow/include/*'
	@echo "make setup: $(SHIP_ENV) ($$(du -h $(SHIP_ENV) | cut -f1)) from $(SHIP_VENV)"

# Fetches the sbt launcher on first use, resolves every JVM dependency of the build (Maven
# Central only) and writes .tools/minihdfs.classpath, .tools/miniyarn.classpath,
# .tools/postgres-jdbc.classpath, .tools/hadoop-aws.classpath, .tools/hadoop-azure.classpath and
# .tools/gcs-connector.classpath.
setup-jvm: setup-system
	$(SBT) update minihdfs/exportClasspath miniyarn/exportClasspath postgresJdbc/exportClasspath \
	  hadoopAws/exportClasspath hadoopAzure/exportClasspath gcsConnector/exportClasspath
	@test -s $(MINIHDFS_CP)
	@test -s $(MINIYARN_CP)
	@test -s $(POSTGRES_JDBC_CP)
	@test -s $(HADOOP_AWS_CP)
	@test -s $(HADOOP_AZURE_CP)
	@test -s $(GCS_CONNECTOR_CP)

# Rebuild the jar in the source tree when a Java source changed (editable install picks it up).
$(JAR): $(JAVA_MAIN) setup.py build_support/jar.py build_support/versions.py | $(PY)
	$(PY) setup.py -q build_jar

jar: $(JAR)

# Rebuild the TensorFlow plugin when its source changed.
$(TF_PLUGIN): tfrecord_io/_native/tf_filesystem.cc setup.py build_support/tf_plugin.py | $(PY)
	$(PY) setup.py -q build_tf_plugin

tf-plugin: $(TF_PLUGIN)

# Recompile MiniHdfs and rewrite its classpath when its sources or the build changed, so the
# test HDFS never runs stale classes. (make setup always rewrites it.)
$(MINIHDFS_CP): $(MINIHDFS_SRC) build.sbt
	$(SBT) minihdfs/exportClasspath

# The test YARN's (it holds MiniHdfs too).
$(MINIYARN_CP): $(MINIYARN_SRC) $(MINIHDFS_SRC) build.sbt
	$(SBT) miniyarn/exportClasspath

# The PostgreSQL JDBC driver's jars (the tests' spark.jars).
$(POSTGRES_JDBC_CP): build.sbt
	$(SBT) postgresJdbc/exportClasspath

# Hadoop's S3A connector (the tests' Spark classpath).
$(HADOOP_AWS_CP): build.sbt
	$(SBT) hadoopAws/exportClasspath

# Hadoop's ABFS connector (the tests' Spark classpath).
$(HADOOP_AZURE_CP): build.sbt
	$(SBT) hadoopAzure/exportClasspath

# Google's Cloud Storage connector (the tests' Spark classpath).
$(GCS_CONNECTOR_CP): build.sbt
	$(SBT) gcsConnector/exportClasspath

# ---------------------------------------------------------------------------------------------
# tests

# Every suite always runs; the target fails if any failed.
# Each suite's time, and pytest's slowest tests, are printed, so CI logs show what each costs.
test:
	@status=0; \
	for suite in test-jvm test-python test-spark35; do \
	  start=$$SECONDS; rc=0; \
	  $(MAKE) --no-print-directory $$suite || rc=$$?; \
	  echo "make test: $$suite took $$((SECONDS - start)) s (exit $$rc)"; \
	  if [ $$rc -ne 0 ]; then status=$$rc; fi; \
	done; \
	if [ $$status -ne 0 ]; then echo "make test: FAILED (see above)" >&2; fi; \
	exit $$status

test-jvm:
	$(SBT) core/test

# pytest's exit status 5 (no tests collected) is a failure here.
test-python: $(JAR) $(TF_PLUGIN) $(MINIHDFS_CP) $(MINIYARN_CP) $(POSTGRES_JDBC_CP) $(HADOOP_AWS_CP) $(HADOOP_AZURE_CP) \
  $(GCS_CONNECTOR_CP)
	@rc=0; $(PY) -m pytest tests -ra --durations=40 $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test-python: pytest collected no tests; failing" >&2; exit 1; fi; \
	exit $$rc

# On pyspark 3.5 (Scala 2.12), with the jar built against pyspark 4.3: what depends on Spark's
# version. The data source and the DataFrame functions (the jar's DataSource V1 paths and its
# protobuf codec on Scala 2.12), ml.predict (without arrow_udf, which Spark 3.5 lacks), and,
# with their Connect cases (marker connect), on Spark 3.5's Connect server ($(CONNECT35_JAR)):
# the session's refusals and the errors of the jar as a 3.5 client reports them, a node's
# exception over a Connect session and two feeds in turns; on a classic session, the feed's job
# tags (SparkContext.addJobTag, cancelJobsWithTag) and status tracker (getJobIdsForTag): an
# epoch's job queued behind the one running, and a feeding stopped by its timeout. Spark's
# Python workers run the 3.5 environment too. The rest of the launcher and the feed, the RDD
# helpers and Spark ML's stages use the same Spark API on both lines: they run on 4.3 only. The Connect cases of the data source and the
# DataFrame functions are their errors and one round trip of each kind (SPARK35_SELECT): a
# Connect server runs the very reads and writes of the classic cases; what the 3.5 client adds
# is how it sends the functions' plans and reports the jar's errors.
SPARK35_SELECT := not connect or not (test_source or test_dataframe) or fails or refuses \
  or raise or bad_arguments or round_trips_with_its_schema or partitioned_output_round_trip
RUN_OVER_CONNECT := tests/cluster/test_run_over_connect.py
FEED_OVER_CONNECT := tests/cluster/test_feed_over_connect.py
SPARK35_TESTS := tests/spark/test_source.py tests/spark/test_dataframe.py \
  tests/spark/test_spark_connect.py tests/spark/test_spark_s3a_settings.py tests/ml/test_predict.py \
  $(RUN_OVER_CONNECT)::test_an_exception_names_the_node_and_its_traceback_within_seconds \
  $(FEED_OVER_CONNECT)::test_two_feeds_in_turns_reach_every_worker_once_with_equal_shares \
  tests/cluster/test_feed_cache.py::test_with_kept_batches_the_next_epochs_job_waits_in_sparks_queue_before_this_one_ends \
  tests/cluster/test_feed_stop.py::test_train_stops_the_feeding_and_raises_timeout_error_when_its_timeout_passes
test-spark35: $(JAR) $(TF_PLUGIN) $(MINIHDFS_CP) $(POSTGRES_JDBC_CP) $(CONNECT35_JAR) | $(PY35)
	@rc=0; PYSPARK_PYTHON=$(abspath $(PY35)) PYSPARK_DRIVER_PYTHON=$(abspath $(PY35)) \
	  $(PY35) -m pytest $(SPARK35_TESTS) -k '$(SPARK35_SELECT)' -ra --durations=15 \
	    $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test-spark35: pytest collected no tests; failing" >&2; exit 1; fi; \
	exit $$rc

# The checks of tests/architecture (ruff, import-linter's contracts in pyproject.toml) alone.
lint: | $(PY)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache

# ---------------------------------------------------------------------------------------------
# release artifacts

# sdist and wheel into dist/, built once, without isolation: this environment has pyspark (for
# javac) and TensorFlow (for the plugin), so the wheel is the platform wheel with the plugin.
dist: | $(PY)
	$(PY) -m build --no-isolation --outdir dist .

# The Maven artifact org.tfrecordio:tfrecord-io into ~/.m2/repository (or -Dmaven.repo.local
# given in SBT_OPTS); `bin/sbt core/publishLocal` for ~/.ivy2/local.
publish-m2:
	$(SBT) core/publishM2

# ---------------------------------------------------------------------------------------------
# documentation

# The MkDocs site (mkdocs.yml, docs/) into site/; --strict: any warning (a broken link, a page
# missing from the nav, a missing snippet file) fails. `.venv/bin/mkdocs serve` to browse.
docs: | $(PY)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# ---------------------------------------------------------------------------------------------
# by hand

bench: $(JAR)
	$(PY) bench/run.py

hdfs: $(MINIHDFS_CP)
	$(PY) -m tfrecord_io.testing.minihdfs

yarn: $(MINIYARN_CP)
	$(PY) -m tfrecord_io.testing.miniyarn

postgres: | $(PY)
	$(PY) -m tfrecord_io.testing.postgres --mnist ../shared/data/mnist

connect: $(JAR)
	$(PY) -m tfrecord_io.testing.connect

s3: | $(PY)
	$(PY) -m tfrecord_io.testing.s3 --bucket data

azurite: setup-azurite | $(PY)
	$(PY) -m tfrecord_io.testing.azurite --container data

gcs: setup-fake-gcs-server | $(PY)
	$(PY) -m tfrecord_io.testing.gcs --bucket data

clean:
	rm -rf build dist site *.egg-info .pytest_cache target project/target project/project \
	  jvm/target jvm/minihdfs/target jvm/miniyarn/target jvm/postgres-jdbc/target $(JAR) $(TF_PLUGIN)
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) $(VENV35) $(SHIP_VENV) .tools
