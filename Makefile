# encore - the two set-up commands of the README, and friends.
#   make run   [MODEL=DIR] [PROMPT="..."]  build and generate text (demo model by default)
#   make test                             build and run the whole suite: release,
#                                         forced narrower CPU ISAs, sanitizers
#                                         (ASan+UBSan), fuzzers; a summary says
#                                         which stage failed
BUILD ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
JOBS ?= $(shell nproc)
MODEL ?= $(BUILD)/models/demo
PROMPT ?= The capital of France is
TOKENS ?= 48

.PHONY: deps build run test test-release test-isa test-asan test-fuzz bench-model bench-moe-model clean

deps:
	@scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

# The prompt and model path reach the shell as environment variables, as
# given: quotes, $ and backquotes in the prompt stay text.
run: export ENCORE_RUN_PROMPT = $(value PROMPT)
run: export ENCORE_RUN_MODEL = $(MODEL)
run: build
	./$(BUILD)/encore generate -m "$$ENCORE_RUN_MODEL" -p "$$ENCORE_RUN_PROMPT" -n $(TOKENS) --temperature 0

test:
	@scripts/test-stages.sh

test-release: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The suite once per narrower CPU ISA, but for the tokenizer's tests (no
# kernels) and the Vulkan tests' validation-layer reruns.
test-isa: build
	@set -e; for isa in $$(scripts/isa-variants.sh); do \
	  echo "test-isa: ENCORE_CPU_ISA=$$isa"; \
	  ENCORE_CPU_ISA=$$isa ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -LE 'vulkan_validation|tokenizer'; \
	done

# The suite under the sanitizers, but for the Vulkan tests' validation-layer
# reruns: the layer checks encore's use of the Vulkan API, which the release
# stage's reruns check already, while the same tests without the layer are
# what the sanitizers check (the reruns were a third of this stage's time).
test-asan: deps
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DENCORE_SANITIZE=ON
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	ctest --test-dir $(BUILD_ASAN) --output-on-failure -j $(JOBS) -LE 'nosan|vulkan_validation'

# The fuzzers read no device, so this build is also the one without the
# Vulkan backend: every source and test must compile in that configuration.
test-fuzz: deps
	CC=clang cmake -S . -B $(BUILD_FUZZ) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DENCORE_FUZZ=ON -DENCORE_VULKAN=OFF
	cmake --build $(BUILD_FUZZ) -j $(JOBS)
	ctest --test-dir $(BUILD_FUZZ) --output-on-failure -L fuzz

# The Qwen3-0.6B-geometry checkpoint for benchmarks (1.2 GB, random weights).
bench-model: build
	/usr/bin/python3 scripts/gen_checkpoint.py --preset qwen3-0.6b-geometry --out $(BUILD)/models/qwen3-0.6b-geometry --tokenizer-dir $(BUILD)/tokenizer/qwen3

bench-moe-model: build
	/usr/bin/python3 scripts/gen_checkpoint.py --preset qwen3-moe-bench-geometry --out $(BUILD)/models/qwen3-moe-bench-geometry --tokenizer-dir $(BUILD)/tokenizer/qwen3

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)
