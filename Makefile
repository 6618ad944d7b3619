# The two set-up commands of the README: `make demo` and `make test`. Each installs what it needs first.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: install jars jars-s3a demo test test-unit test-pythons faults kraft-campaign zk-campaign lint clean bench big-replay

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Kafka broker jars and Spark's Kafka/Delta connector jars, from Maven Central into .cache/ (git-ignored).
jars: install
	$(PY) -m streaming.infra.jars fetch

# Hadoop's S3A connector and its AWS SDK bundle (~645 MB), for tests/integration/test_storage.py (make test
# fetches it before the tests start; the test fetches it itself when run alone).
jars-s3a: install
	$(PY) -m streaming.infra.jars fetch s3a

demo: install jars
	$(VENV)/bin/isrflow demo

# The unit tests under the other Pythons need no JVM: they run beside the main suite (installing their venvs is
# mostly waiting on pip), their lines printed after it; make test fails if either does.
OTHER_PYTHONS_LOG := .cache/other-pythons.log
test: install jars jars-s3a
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	nice -n 5 $(PY) tools/other_pythons.py > $(OTHER_PYTHONS_LOG) 2>&1 & other=$$!; \
	$(VENV)/bin/pytest -ra --durations=30; suite=$$?; \
	wait $$other; others=$$?; cat $(OTHER_PYTHONS_LOG); \
	if [ $$suite -ne 0 ]; then exit $$suite; fi; exit $$others

# The unit tests under each other Python that requires-python admits and this machine has (.venv-3.X, git-ignored,
# installed again only when pyproject.toml changes); make test runs this beside the main suite.
test-pythons: install
	$(PY) tools/other_pythons.py

# The long fault-injection campaign (docs/reliability.md): tests/faults with 100 crash/restart trials of
# `isrflow run` and 1,000,000 hostile records (make test runs 3 and 10,000).
faults: install jars
	ISRFLOW_FAULT_TRIALS=100 ISRFLOW_FUZZ_INPUTS=1000000 ISRFLOW_FUZZ_EXAMPLES=20000 \
		$(VENV)/bin/pytest -ra -s tests/faults

# The differential campaign on real KRaft clusters (docs/kraft.md, "The campaign"): RUNS seeded random scripts of
# OPS operations from SEED on, over the Kafka VERSIONS in turn, each replayed from the controller's log and compared with it (make test runs one
# short run); SPARK=1 also replays the first run with the Spark engine. Each seed draws 1 to 3 log dirs per broker
# (from 3.7-IV2; a broker may then lose one under it, or move a replica to another). VERSIONS of 3.7, 3.8, 3.9, 4.0,
# 4.1, 4.2, 4.3, 4.4: 3.7, 3.8, 3.9, 4.0, 4.2 and 4.3 each draw the metadata.version they are formatted at and
# upgrade to their newest mid-run; each release but 4.1 has its own jars, fetched on its first run.
RUNS ?= 20
SEED ?= 1
OPS ?= 30
VERSIONS ?= 4.4,4.1,3.9
kraft-campaign: install jars
	cd tests/integration && ../../$(PY) kraft_campaign.py --runs $(RUNS) --seed $(SEED) --ops $(OPS) --versions $(VERSIONS) \
		--out ../../out/kraft-campaign $(if $(SPARK),--spark)

# The same campaign on real ZooKeeper-mode clusters (docs/zookeeper.md, "The campaign"): every release in turn, each
# at its own inter.broker.protocol.version (3.9, 2.8, 2.7, 3.0, 3.5: Kafka 3.9.1, 2.8.2, 2.7.2, 3.0.2, 3.5.2, the
# older ones' jars fetched on first use) and Kafka 3.9.1 at 2.6; make test runs one short run. KEEP=1 keeps every run (the
# ZooKeeper directory and each broker's state-change.log); RECHECK=1 starts no cluster and compares every kept run again.
ZK_VERSIONS ?= 3.9,2.6,2.8,2.7,3.0,3.5
zk-campaign: install jars
	cd tests/integration && ../../$(PY) zk_campaign.py --runs $(RUNS) --seed $(SEED) --ops $(OPS) \
		--versions $(ZK_VERSIONS) --out ../../out/zk-campaign $(if $(SPARK),--spark) $(if $(KEEP),--keep) \
		$(if $(RECHECK),--recheck)

test-unit: install
	$(VENV)/bin/pytest -ra tests/unit tests/analysis

# The performance benchmarks of docs/performance.md, one after the other (long: run on an idle machine).
bench: install jars
	$(PY) benchmarks/floor.py --partitions 10000
	$(PY) benchmarks/hot_path.py --partitions 10000
	$(PY) benchmarks/broker_failure.py --partitions 1000,10000,100000 --plot docs/broker_failure.png
	$(PY) benchmarks/broker_failure.py --partitions 10000 --controlled-shutdown
	$(PY) benchmarks/steady_state.py --partitions 1000,10000,100000 --plot docs/steady_state.png
	$(PY) benchmarks/replay_throughput.py --events 100000
	$(PY) benchmarks/memory.py --events 1000000
	$(PY) benchmarks/bridge_poll.py --records 10000,100000,1000000 --whole-max 1000000

# replay kraft:DIR of a 100,000-partition cluster's log (docs/performance.md, "A 100,000-partition log"): the log is
# built once under .cache/big-replay (32 s), then the import, the local replay, the agreement outputs, the whole
# command and the Spark engine are timed apart (long, about half an hour with Spark: run on an idle machine).
big-replay: install jars
	nice -n 5 $(PY) benchmarks/big_replay.py

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

clean:
	rm -rf .cache/spark-tmp out test-artifacts spark-warehouse
