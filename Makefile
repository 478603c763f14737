# Two entry points: `make demo` (set up + simulate a bundled workload) and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test typecheck bench lint clean

$(STAMP): pyproject.toml
	@echo "setting up $(VENV): pip, then accelsim and its dependencies (first time: 1-2 minutes)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --progress-bar off -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/accelsim run --hw hwconfigs/tpu-like.yaml --workload workloads/resnet18.yaml --sparsity 2:4

test: $(STAMP)
	$(BIN)/ruff check accelsim tests benchmarks
	$(BIN)/mypy accelsim
	$(BIN)/python -m pytest -n auto --dist loadfile

typecheck: $(STAMP)
	$(BIN)/mypy accelsim

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_engine.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
