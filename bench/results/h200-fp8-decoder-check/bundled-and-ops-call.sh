set -u
pkg=/tmp/steno; mkdir -p $pkg && tar xf gpu-pkg/steno-gpu-ops.tar.xz -C $pkg
$pkg/run.sh ops_cuda_test --gtest_filter='Fp8Cuda.*' > $OUT/ops-fp8.log 2>&1; tail -15 $OUT/ops-fp8.log
for dt in fp8 bf16; do for b in 32 1; do
  $pkg/run.sh steno transcribe --model models/steno-tdt-small-en --device cuda --dtype $dt --batch-size $b -f json tests/data/testset/*/audio/*.flac > $OUT/bundled-$dt-b$b.json 2>$OUT/bundled-$dt-b$b.log
done; done
python3 - $OUT <<'PY'
import json,sys,os
o=sys.argv[1]
r={n:{os.path.basename(f['file']):f['text'] for f in json.load(open(f"{o}/bundled-{n}.json"))['files']} for n in ('fp8-b32','fp8-b1','bf16-b32','bf16-b1')}
for a,b in (('fp8-b32','fp8-b1'),('bf16-b32','bf16-b1'),('fp8-b1','bf16-b1')):
    same=sum(r[a][k]==r[b][k] for k in r[a]); print(a,'vs',b,':',same,'of',len(r[a]),'equal')
PY
