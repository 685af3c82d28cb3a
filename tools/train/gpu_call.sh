#!/usr/bin/env bash
# One training call on the GPU machine, whole, as a `run` command: the loss lattice built and checked against the
# PyTorch one (its output and timing at the head of OUT/NAME/job.log), gpu_train_grow.sh to the deadline, the newest checkpoint
# exported to OUT/NAME by gpu_snapshot.sh (whatever happened before it: every call brings a model back), and the
# trainer's milestones printed. A call issued at once on the warm machine goes on with /tmp/data and /tmp/ckpt.
#
#   [INIT_MODEL=... DATA_SEED=... VOICE_AUG=1 BESIDE_JOBS=12 MIN_LEFT_S=200 ...] \
#     tools/train/gpu_call.sh NAME DEADLINE_S MAX_STEPS [TRAIN.PY FLAGS...]
#
# OUT is $OUT (the run's folder); batches of BATCH_UTTERANCES (default 20000); the environment is
# gpu_train_grow.sh's. DEADLINE_S is the training job's; the call takes ~30 s more (the lattice, the snapshot).
# A call brings back at most 8 files and OUT/NAME holds 7 or 8 (the model's 3, or 4 where its weights come in two
# parts, and 4 logs): whatever else the same call writes to OUT must be one archive, or the model stays behind.
set -uo pipefail
cd "$(dirname "$0")/../.."
name=$1 deadline=$2 max_steps=$3
shift 3
dest=${OUT:?set OUT: the run call output folder}/$name
mkdir -p "$dest"
export PYTHONUNBUFFERED=1
lib=/tmp/tdt_lattice/libsteno_tdt_lattice.so
if [ -z "${STENO_TDT_LATTICE+set}" ]; then
  if { tools/train/build_tdt_lattice.sh /tmp/tdt_lattice && python3 tools/train/tdt_lattice_cuda.py "$lib" --bench; } \
       > /tmp/lattice-"$name".txt 2>&1; then
    export STENO_TDT_LATTICE=$lib
  else
    export STENO_TDT_LATTICE=  # gpu_train_grow.sh and train.py then use the PyTorch lattice
    echo "gpu_call: the CUDA lattice is not used (see the head of $dest/job.log)"
  fi
fi
touch /tmp/lattice-"$name".txt
tools/train/gpu_train_grow.sh /tmp/ckpt "$deadline" "$max_steps" "${BATCH_UTTERANCES:-20000}" "$@" \
  > /tmp/train-"$name".log 2>&1 < /dev/null
echo "gpu_call: gpu_train_grow.sh exited $?"
cat /tmp/lattice-"$name".txt /tmp/train-"$name".log > /tmp/job-"$name".log
tools/train/gpu_snapshot.sh /tmp/ckpt "$dest" /tmp/data/dev/manifest.jsonl /tmp/job-"$name".log
grep -E "grow:|lattice|data grew|eval step|profile of|done:|step [0-9]*000 " /tmp/train-"$name".log | tail -40
