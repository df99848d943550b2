# Two commands do all the set-up: `make demo` runs the main job, `make test` passes the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: test demo e2e lint typecheck pytest system-deps bench clean judge-model reader-model relevance-model

$(STAMP): pyproject.toml collector/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]' -e './collector[test]'
	touch $(STAMP)

# Debian packages the tests drive for real (headless Chromium for the collector's page; promtool and
# amtool for the shipped Prometheus rules and Alertmanager example, see prometheus-deps).
system-deps: prometheus-deps node-deps postgres-deps haproxy-deps
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium (Debian) for the page tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# Debian's haproxy for the fleet test (tests/collector/test_fleet.py runs the shipped collector/deploy/haproxy.cfg
# in front of three replicas, on loopback; the package's own service is not used).
.PHONY: haproxy-deps
haproxy-deps:
	@command -v haproxy >/dev/null 2>&1 || test -x /usr/sbin/haproxy || { \
	  echo "installing haproxy (Debian) for the fleet test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    haproxy >/dev/null; }

# Debian's PostgreSQL 15 server for the collector's PostgreSQL engine tests (tests/collector/_postgres.py starts
# its own server as the `postgres` user in a temp dir on a free loopback port; the package's own cluster is not
# used). Without recommends; the postinst starts no daemon in a container.
.PHONY: postgres-deps
postgres-deps:
	@test -x /usr/lib/postgresql/15/bin/initdb || test -x /usr/lib/postgresql/16/bin/initdb || \
	  test -x /usr/lib/postgresql/17/bin/initdb || { \
	  echo "installing postgresql (Debian) for the PostgreSQL engine tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    postgresql >/dev/null; }

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP) system-deps
	$(BIN)/pytest -q

test: lint typecheck pytest

demo: $(STAMP)
	$(BIN)/python examples/demo.py

# Not part of `make test` (which runs the fleet test's small load): the full fleet load, through haproxy alone and
# through rotel then haproxy, with kill -9 of the leader and of another replica (tests/collector/test_fleet.py).
.PHONY: e2e-fleet
e2e-fleet: $(STAMP) postgres-deps haproxy-deps
	$(BIN)/pytest -q -m e2e tests/collector/test_fleet.py

# Not part of `make test`: installs Arize Phoenix in its own venv and checks ragtrace's scores in it.
PHOENIX_VENV ?= .venv-phoenix
$(PHOENIX_VENV)/.installed-stamp:
	$(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PHOENIX_VENV)/bin/python -m pip install --quiet arize-phoenix
	touch $@

e2e: $(STAMP) $(PHOENIX_VENV)/.installed-stamp
	$(BIN)/python examples/e2e_phoenix.py --phoenix $(PHOENIX_VENV)/bin/phoenix

# Debian's Prometheus 2.42 and Alertmanager 0.25: promtool/amtool check collector/deploy/prometheus/ in
# `make test`, the servers run `make e2e-prometheus`. About 12 s on a machine that has the package lists
# (30 MB download). Without recommends: no node exporter. The packages' postinst starts no daemon in a
# container (no init runlevel, or policy-rc.d); the e2e starts its own, on loopback.
.PHONY: prometheus-deps e2e-prometheus
prometheus-deps:
	@command -v promtool >/dev/null 2>&1 && command -v amtool >/dev/null 2>&1 || { \
	  echo "installing prometheus and prometheus-alertmanager (Debian) for the rules tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    prometheus prometheus-alertmanager >/dev/null; }

# Debian's Node.js and npm for tests/collector/test_join_node.py (a Node.js RAG app traced with the OpenTelemetry
# JS SDK, scored by the collector); the test installs its npm packages into .ragtrace/node itself. Skipped when
# node and npm are there (any origin, e.g. NodeSource's nodejs, which bundles npm). Debian's npm is 356 small
# packages (23 MB) without recommends: about 4 s to unpack here; the install was not timed end to end because
# this machine's NodeSource nodejs conflicts with Debian's npm.
.PHONY: node-deps
node-deps:
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { \
	  echo "installing nodejs and npm (Debian) for the Node.js collector test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    nodejs npm >/dev/null; }

# Not part of `make test`: the support bot's score metrics scraped by a real Prometheus running the shipped
# rules, a hallucination spike, and Alertmanager delivering RagHallucinationSpike to a local webhook
# (examples/e2e_prometheus.py). opentelemetry-exporter-prometheus lives in its own venv, not in .venv.
PROMETHEUS_VENV ?= .ragtrace/venv-prometheus
$(PROMETHEUS_VENV)/.installed-stamp: pyproject.toml
	$(PYTHON) -m venv $(PROMETHEUS_VENV)
	$(PROMETHEUS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PROMETHEUS_VENV)/bin/python -m pip install --quiet -e . opentelemetry-exporter-prometheus
	touch $@

e2e-prometheus: prometheus-deps $(PROMETHEUS_VENV)/.installed-stamp
	$(PROMETHEUS_VENV)/bin/python examples/e2e_prometheus.py

# Not part of `make test`: rebuilds the offline judge's support model from ../shared/data's *_train files
# (seeded), exports it to int8 ONNX, measures it on the dev files, puts it in the package and refits the
# judge's calibration on it (training/judge/README.md). torch and transformers live in their own venv;
# about three hours on 2 CPU cores.
TRAIN_VENV ?= .venv-train
$(TRAIN_VENV)/.installed-stamp: training/requirements.txt pyproject.toml
	$(PYTHON) -m venv $(TRAIN_VENV)
	$(TRAIN_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(TRAIN_VENV)/bin/python -m pip install --quiet -r training/requirements.txt -e .
	touch $@

# How many pairs of each kind the balanced swap-aware sample keeps (a seeded sample of every pair built).
BALANCED_KINDS = same_kind=1100,sentence_same_kind=700,swapped=900,multi_swapped=900,span=700,hallucinated=600,\
swap=300,negated=200,number=150,copy_negated=150,copy_number=150,copy_swap=150,doc_negated=100,doc_number=100,\
doc_swap=100,summary_unsupported=200,answer=1500,copy=600,doc_sentence=500,multi_kept=900,sentence=800,summary=1000,\
swapped_kept=900
# One epoch on the balanced pairs (each from the one before: --init, --out and --seed added).
BALANCED_EPOCH = $(TRAIN_VENV)/bin/python training/judge/train.py --pairs training/.work/pairs-balanced.jsonl \
  --epochs 1 --lr 4e-5 --head-lr 5e-4

judge-model: $(TRAIN_VENV)/.installed-stamp
	$(TRAIN_VENV)/bin/python training/judge/build_data.py
	$(TRAIN_VENV)/bin/python training/judge/train.py --out training/.work/model-first
	$(TRAIN_VENV)/bin/python training/judge/train.py --init training/.work/model-first --out training/.work/model \
	  --epochs 0.6 --lr 4e-5 --head-lr 5e-4 --seed 14
	# Three epochs on the swap-aware pairs, balanced against as many positives (training/judge/README.md).
	$(TRAIN_VENV)/bin/python training/judge/build_data.py --swap-aware --max-pairs 0 --full-kinds "" \
	  --out training/.work/all-pairs.jsonl
	$(TRAIN_VENV)/bin/python training/judge/build_data.py --from training/.work/all-pairs.jsonl --max-pairs 0 \
	  --full-kinds "" --per-kind '$(BALANCED_KINDS)' --out training/.work/pairs-balanced.jsonl
	$(BALANCED_EPOCH) --init training/.work/model --out training/.work/model-balanced --seed 16
	$(BALANCED_EPOCH) --init training/.work/model-balanced --out training/.work/model-balanced2 --seed 17
	$(BALANCED_EPOCH) --init training/.work/model-balanced2 --out training/.work/model-balanced3 --seed 18
	$(TRAIN_VENV)/bin/python training/judge/export.py --model training/.work/model-balanced3
	$(TRAIN_VENV)/bin/python training/judge/evaluate.py
	cp training/.work/support-minilm-l6-int8.onnx ragtrace/judges/_assets/
	$(TRAIN_VENV)/bin/python training/fit_alignment.py
	$(TRAIN_VENV)/bin/python bench/calibrate_offline.py

# Not part of `make test`: rebuilds the offline judge's answer reader from the QA train rows (seeded), exports
# it to int8 ONNX, measures it beside the support model on the dev calibration split, puts it in the package
# and refits the judge's calibration (training/reader/README.md); about 45 minutes on 2 CPU cores.
reader-model: $(TRAIN_VENV)/.installed-stamp
	$(TRAIN_VENV)/bin/python training/reader/train.py --out training/.work/reader
	$(TRAIN_VENV)/bin/python training/reader/export.py --model training/.work/reader
	$(TRAIN_VENV)/bin/python training/reader/evaluate.py
	cp training/.work/reader-minilm-l6-int8.onnx ragtrace/judges/_assets/
	$(TRAIN_VENV)/bin/python bench/calibrate_offline.py

# Not part of `make test`: rebuilds the offline judge's relevance model from the QA train rows (seeded), exports
# it to int8 ONNX, measures it beside the embedding cosine on the dev calibration split, puts it in the package
# and refits the judge's calibration (training/relevance/README.md); about 35 minutes on 2 CPU cores.
relevance-model: $(TRAIN_VENV)/.installed-stamp
	$(TRAIN_VENV)/bin/python training/relevance/build_data.py --out training/.work/relevance-pairs.jsonl
	$(TRAIN_VENV)/bin/python training/judge/train.py --pairs training/.work/relevance-pairs.jsonl \
	  --out training/.work/relevance --epochs 0.75 --seed 31
	$(TRAIN_VENV)/bin/python training/judge/export.py --model training/.work/relevance --questions \
	  --out training/.work/relevance-minilm-l6-int8.onnx
	$(TRAIN_VENV)/bin/python training/relevance/evaluate.py --model training/.work/relevance-minilm-l6-int8.onnx
	cp training/.work/relevance-minilm-l6-int8.onnx ragtrace/judges/_assets/
	$(TRAIN_VENV)/bin/python bench/calibrate_offline.py

clean:
	rm -rf $(VENV) $(PHOENIX_VENV) $(TRAIN_VENV) .mypy_cache .ruff_cache .pytest_cache .ragtrace training/.work
