#!/usr/bin/env bash
# Installs everything steno needs to build and test on Debian 12 (bookworm), from Debian's own packages.
# Used by the README's quick start and by .ci/run, so the two can never drift apart.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkgconf
  # C++ libraries
  nlohmann-json3-dev libspdlog-dev libfmt-dev libcli11-dev
  libsndfile1-dev libsoxr-dev libdnnl-dev libopenblas-openmp-dev libhwy-dev
  libavformat-dev libavcodec-dev libswresample-dev  # MP4/M4A and WebM uploads (optional: STENO_WITH_FFMPEG)
  libsentencepiece-dev sentencepiece
  libyaml-cpp-dev  # model_config.yaml of NeMo checkpoints (steno model import)
  libssl-dev  # SHA-256 of .nemo checkpoints (the model cache)
  libcurl4-openssl-dev  # steno model pull (the Hugging Face Hub)
  prometheus-cpp-dev
  libboost1.81-dev  # Beast + Asio, header-only (the HTTP server)
  # KServe over gRPC (optional at build time: CMake STENO_WITH_GRPC); protobuf is linked statically (libprotobuf.a)
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # fuzz/smoke.sh: every parser's libFuzzer target with ASan and UBSan (clang's runtime)
  clang libclang-rt-dev
  # offline Python tooling: reference model, converter, golden files
  python3 python3-torch python3-numpy python3-yaml python3-sentencepiece
  # audio fixtures for tests (every codec steno reads)
  sox flac opus-tools vorbis-tools lame espeak-ng ffmpeg
  # HTTP server tests drive the real server with curl
  curl
  # benchmark reports draw their plots with gnuplot (steno bench report)
  gnuplot-nox
  # deploy/'s test runs the autoscalers' queries through a real Prometheus scraping steno; xz unpacks the result
  # file the case study's overlay is planned from. (It also needs kubectl with kustomize v4+, which the machine
  # image brings: Debian 12's kubernetes-client is kubectl 1.20 with kustomize v2, too old for deploy/.)
  prometheus xz-utils
)

if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
