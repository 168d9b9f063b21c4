#!/usr/bin/env bash
# `mpirun -np N weft run` against one process (label mpi): run as `test_mpi_run.sh CASE`, with
# WEFT_CLI (the weft program), MPIEXEC (mpirun) and WEFT_SCENES (scenes/) in the environment.
#   same_2, same_3, same_4  scenes/split_mixed.json (particles and both cloths split over the ranks),
#                           10 frames: stats.csv (but its ms_per_frame timing column), every .vtp
#                           and .ply and the final checkpoint byte-identical to one process with
#                           the same devices (3; 4 for same_4); rank r > 0 writes no files of its
#                           own (its <out>/ranks/<r> stays empty); same_3 also with
#                           WEFT_MPI_HALO=staged (host copies instead of MPI on the buffers)
#                           and refuses a WEFT_MPI_HALO that is none of auto/staged/direct
#   resume_3_to_2           3 ranks write a checkpoint at frame 5; 2 ranks resume it to frame 10;
#                           the checkpoint at 10 is the one-process run's, byte for byte
#   rank_fails              a health check that fails mid-run (simulation.max_speed) stops every
#                           rank at the same frame: exit 1 everywhere, messages naming the rank and
#                           the reason; and one rank alone failing (its output directory) stops
#                           both, the other naming it
#   sigterm                 SIGTERM to the ranks: every rank checkpoints after the same frame and
#                           exits 143
#   pieces                  3 ranks: each writes its piece of the particles' .vtp (the particles its
#                           partitions own, in id order), rank 0 the .pvtp and <object>_pieces.pvd;
#                           the pieces' ids are disjoint and with their values make the whole .vtp;
#                           each cloth's pieces (the triangles whose lowest vertex the rank owns,
#                           with their vertices) hold every triangle once and the whole .vtp's
#                           values at each vertex; a cloth every rank runs whole is rank 0's
#                           piece alone; one rank writes no pieces
#   bench                   mpirun -np 2 weft bench scaling --mpi --quick: its rows and its model
#   last_good_2, last_good_3  tests/scenes/blowup.json (3 partitions) blows up at frame 14, long
#                           after the first repartition: every rank stops at the same frame and
#                           writes checkpoint_last_good_000013.wfck byte-identical to one
#                           process's (the verdict is agreed before any snapshot is taken, the
#                           snapshot gathered over the ranks), and resuming it on 2 ranks gives
#                           the one-process resume's checkpoint two frames on, byte for byte
# Tolerance: none (cmp). Each case takes 3-12 s on 2 cores, mostly mpirun starting the ranks.
set -u
case_=${1:?case}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
scene=$WEFT_SCENES/split_mixed.json
mpi() { local n=$1; shift; "$MPIEXEC" -np "$n" --oversubscribe "$WEFT_CLI" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

# stats.csv without column 11 (ms_per_frame, a timing)
stats() { cut -d, -f1-10,12- "$1/stats.csv"; }

same_outputs() { # dir_a dir_b
  [ -s "$1/stats.csv" ] || fail "$1/stats.csv missing"
  cmp <(stats "$1") <(stats "$2") || fail "stats.csv differs between $1 and $2"
  local n=0
  for f in "$1"/*.vtp "$1"/*.ply "$1"/*.wfck; do
    [ -e "$f" ] || continue
    cmp -s "$f" "$2/$(basename "$f")" || fail "$(basename "$f") differs"
    n=$((n + 1))
  done
  [ "$n" -ge 6 ] || fail "only $n files compared"
  echo "same: stats.csv and $n files"
}

case $case_ in
same_2 | same_3 | same_4)
  n=${case_#same_}
  devs=()
  [ "$n" = 4 ] && devs=(--device cpu:0,cpu:1,cpu:2,cpu:3)
  "$WEFT_CLI" run "$scene" --frames 10 --out "$tmp/one" --quiet "${devs[@]}" || fail "one process"
  mpi "$n" run "$scene" --frames 10 --out "$tmp/mpi" --quiet "${devs[@]}" || fail "mpirun -np $n"
  same_outputs "$tmp/one" "$tmp/mpi"
  # the other ranks wrote nothing of their own (outputs.discard) but their pieces
  [ -z "$(ls -A "$tmp/mpi/ranks/1")" ] || fail "rank 1 wrote $(ls "$tmp/mpi/ranks/1" | head -3)"
  if [ "$n" = 3 ]; then # halos through host copies (WEFT_MPI_HALO) give the same bytes
    WEFT_MPI_HALO=staged mpi 3 run "$scene" --frames 10 --out "$tmp/staged" --quiet ||
      fail "mpirun -np 3, staged halos"
    same_outputs "$tmp/one" "$tmp/staged"
    WEFT_MPI_HALO=sideways "$WEFT_CLI" run "$scene" --frames 1 --out "$tmp/bad" --quiet \
      2>"$tmp/err"
    rc=$?
    [ "$rc" = 2 ] && grep -q "WEFT_MPI_HALO='sideways'" "$tmp/err" ||
      fail "a bad WEFT_MPI_HALO: exit $rc, $(cat "$tmp/err")"
  fi
  ;;
resume_3_to_2)
  "$WEFT_CLI" run "$scene" --frames 10 --out "$tmp/one" --quiet || fail "one process"
  mpi 3 run "$scene" --frames 5 --out "$tmp/a" --quiet --every 5 || fail "3 ranks"
  mpi 2 run "$scene" --frames 10 --out "$tmp/b" --quiet --every 5 \
    --resume "$tmp/a/checkpoint_000005.wfck" ||
    fail "2 ranks resuming"
  cmp "$tmp/one/checkpoint_000010.wfck" "$tmp/b/checkpoint_000010.wfck" ||
    fail "the resumed checkpoint differs"
  cmp <(stats "$tmp/one" | tail -1) <(stats "$tmp/b" | tail -1) ||
    fail "the resumed stats.csv's last row differs"
  echo "resumed on 2 ranks from 3: bitwise"
  ;;
rank_fails)
  mpi 2 run "$scene" --frames 30 --out "$tmp/f" --quiet --set simulation.max_speed=0.4 \
    >"$tmp/log" 2>&1
  rc=$?
  cat "$tmp/log"
  [ "$rc" = 1 ] || fail "exit $rc, expected 1"
  grep -q "rank [0-9]" "$tmp/log" || fail "no rank named"
  grep -qi "speed" "$tmp/log" || fail "no reason named"
  # one rank alone fails (rank 1 cannot make its output directory: <out>/ranks is a file): both
  # stop before the first frame, rank 0 naming rank 1
  mkdir -p "$tmp/g" && touch "$tmp/g/ranks"
  mpi 2 run "$scene" --frames 30 --out "$tmp/g" --quiet >"$tmp/log2" 2>&1
  rc=$?
  cat "$tmp/log2"
  [ "$rc" = 1 ] || fail "exit $rc, expected 1 (one rank failing)"
  grep -q "rank 0: stopping: MPI rank 1 failed" "$tmp/log2" || fail "rank 0 does not name rank 1"
  grep -q "opening the outputs" "$tmp/log2" || fail "rank 1 does not say what failed"
  [ ! -e "$tmp/g/stats.csv" ] || [ "$(wc -l <"$tmp/g/stats.csv")" -le 1 ] ||
    fail "rank 0 stepped on alone"
  ;;
sigterm)
  "$MPIEXEC" -np 2 --oversubscribe "$WEFT_CLI" run "$scene" --frames 100000 --out "$tmp/s" \
    --quiet >"$tmp/log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do # until the ranks are stepping (rank 0 wrote frame 0)
    [ -s "$tmp/s/stats.csv" ] && break
    sleep 0.1
  done
  sleep 1
  # as a scheduler does (srun, or Slurm's job end): SIGTERM to every rank, which the ranks get at
  # different times; mpirun itself, signalled, would exit 1 whatever its ranks do
  ranks=$(pgrep -P $pid)
  [ -n "$ranks" ] || fail "no rank processes under mpirun $pid"
  kill -TERM $ranks
  wait $pid
  rc=$?
  cat "$tmp/log"
  [ "$rc" = 143 ] || fail "exit $rc, expected 143"
  a=$(ls "$tmp/s" | grep -c '^checkpoint_.*\.wfck$')
  b=$(ls "$tmp/s/ranks/1" | grep -c '^checkpoint_.*\.wfck$')
  [ "$a" = 1 ] && [ "$b" = 1 ] || fail "checkpoints: rank 0 $a, rank 1 $b"
  [ "$(ls "$tmp/s" | grep '^checkpoint_')" = "$(ls "$tmp/s/ranks/1" | grep '^checkpoint_')" ] ||
    fail "the ranks stopped after different frames"
  echo "SIGTERM: both ranks checkpointed $(ls "$tmp/s" | grep '^checkpoint_') and exited 143"
  ;;
pieces)
  mpi 3 run "$scene" --frames 10 --out "$tmp/p" --quiet || fail "mpirun -np 3"
  grep -c '<Piece Source="sand_000010_p[0-2].vtp"/>' "$tmp/p/sand_000010.pvtp" | grep -qx 3 ||
    fail "the .pvtp does not name 3 pieces"
  grep -q 'file="sand_000010.pvtp"' "$tmp/p/sand_pieces.pvd" || fail "the pieces' .pvd"
  # the pieces' point arrays (velocity, radius, id, angular_velocity, the points), decoded from
  # their base64: each piece in ascending id order, no id in two pieces, and together the whole
  # .vtp's ids with each particle's values byte for byte (each rank writes the particles its
  # partitions own, so the pieces are the ranks' slabs, not blocks of ids)
  python3 - "$tmp/p" <<'PY' || fail "the pieces are not the whole .vtp"
import base64, re, struct, sys
d = sys.argv[1]
size = [12, 4, 4, 12, 12]  # bytes a point of each array
def arrays(path):  # the first 5 data arrays, without their UInt64 byte count
    text = open(path).read()
    blobs = re.findall(r'format="binary">\s*([A-Za-z0-9+/=]*)\s*</DataArray>', text)
    return [base64.b64decode(b)[8:] for b in blobs[:5]]
def rows(a):  # id -> the point's bytes in each array
    n = len(a[2]) // 4
    ids = struct.unpack(f"<{n}I", a[2])
    return ids, {g: tuple(a[k][j * size[k]:(j + 1) * size[k]] for k in range(5))
                 for j, g in enumerate(ids)}
whole_ids, whole = rows(arrays(f"{d}/sand_000010.vtp"))
union, sizes, ok, lo, hi = {}, [], True, [], []
for p in range(3):
    ids, r = rows(arrays(f"{d}/sand_000010_p{p}.vtp"))
    sizes.append(len(ids))
    ok = ok and list(ids) == sorted(ids) and not (set(r) & set(union)) and len(ids) > 0
    union.update(r)
    xyz = [struct.unpack("<3f", v[4]) for v in r.values()]
    lo.append([min(x[k] for x in xyz) for k in range(3)] if xyz else [0.0] * 3)
    hi.append([max(x[k] for x in xyz) for k in range(3)] if xyz else [0.0] * 3)
ok = ok and union == whole and len(whole) > 0
# slabs along one axis, in rank order: a piece ends where the next begins, but for what its
# particles moved in the frame since the repartition (2% of the extent); blocks of ids overlap
slabs = [k for k in range(3)
         if all(hi[p][k] < lo[p + 1][k] + 0.02 * (hi[2][k] - lo[0][k]) for p in range(2))]
print("pieces == whole:", ok, sizes, len(whole), "points; slabs along axis", slabs)
sys.exit(0 if ok and slabs else 1)
PY
  # each cloth (both split over the 3 ranks) likewise: its pieces' triangles, mapped through
  # their "vertex" array, are the whole .vtp's, each in exactly one piece; every piece point's
  # position, velocity and normal are the whole file's at that vertex, byte for byte (the pieces
  # come from the same read); every piece has triangles, its vertices ascending
  for c in sheet flag; do
    grep -c "<Piece Source=\"${c}_000010_p[0-2].vtp\"/>" "$tmp/p/${c}_000010.pvtp" | grep -qx 3 ||
      fail "$c: the .pvtp does not name 3 pieces"
    grep -q "file=\"${c}_000010.pvtp\"" "$tmp/p/${c}_pieces.pvd" || fail "$c: the pieces' .pvd"
  done
  python3 - "$tmp/p" <<'PY' || fail "the cloth pieces are not the whole .vtp"
import base64, re, struct, sys
from collections import Counter
d = sys.argv[1]
def arrays(path):  # name -> (bytes a value, the bytes without their UInt64 byte count)
    text, out = open(path).read(), {}
    for head, blob in re.findall(r'<DataArray ([^>]*)format="binary">\s*([A-Za-z0-9+/=]*)\s*<',
                                 text):
        name = re.search(r'Name="([^"]*)"', head)
        kind = re.search(r'type="([^"]*)"', head).group(1)
        comps = re.search(r'NumberOfComponents="(\d+)"', head)
        size = {"Float32": 4, "UInt32": 4, "Int64": 8}[kind] * int(comps.group(1) if comps else 1)
        out[name.group(1) if name else "points"] = (size, base64.b64decode(blob)[8:])
    return out
def rows(a, name):
    size, b = a[name]
    return [b[j:j + size] for j in range(0, len(b), size)]
def tris(a):
    conn = rows(a, "connectivity")
    return [tuple(struct.unpack("<q", conn[j + k])[0] for k in range(3))
            for j in range(0, len(conn), 3)]
ok = True
for cloth in ("sheet", "flag"):
    whole = arrays(f"{d}/{cloth}_000010.vtp")
    cols = ("points", "velocity", "normal")
    vals = {k: rows(whole, k) for k in cols}
    got, sizes = Counter(), []
    for p in range(3):
        a = arrays(f"{d}/{cloth}_000010_p{p}.vtp")
        vertex = [struct.unpack("<I", v)[0] for v in rows(a, "vertex")]
        t = tris(a)
        sizes.append((len(vertex), len(t)))
        ok = ok and len(t) > 0 and vertex == sorted(set(vertex))
        got.update(tuple(vertex[i] for i in tri) for tri in t)
        for k in cols:
            ok = ok and all(v == vals[k][g] for v, g in zip(rows(a, k), vertex))
    want = Counter(tris(whole))
    ok = ok and got == want and max(want.values()) == 1
    print(f"{cloth}: pieces (points, triangles) {sizes}, whole {len(vals['points'])} points, "
          f"{len(want)} triangles: triangles and values the whole's: {ok}")
sys.exit(0 if ok else 1)
PY
  # a cloth not split over the ranks (self_collision: every rank runs it whole) is rank 0's: its
  # piece is the whole mesh, the others' are empty
  mpi 3 run "$scene" --frames 1 --out "$tmp/w" --quiet --set 'cloths[1].self_collision=true' ||
    fail "mpirun -np 3, the flag whole on every rank"
  counts() { grep -o 'NumberOfPoints="[0-9]*"\|NumberOfPolys="[0-9]*"' "$1" | tr '\n' ' '; }
  whole=$(counts "$tmp/w/flag_000001.vtp")
  [ "$(counts "$tmp/w/flag_000001_p0.vtp")" = "$whole" ] &&
    [ "$(counts "$tmp/w/flag_000001_p1.vtp")" = 'NumberOfPoints="0" NumberOfPolys="0" ' ] &&
    [ "$(counts "$tmp/w/flag_000001_p2.vtp")" = 'NumberOfPoints="0" NumberOfPolys="0" ' ] ||
    fail "the unsplit flag's pieces: $(for p in 0 1 2; do counts "$tmp/w/flag_000001_p$p.vtp"; done)"
  echo "the unsplit flag: piece 0 $whole(the whole), pieces 1 and 2 empty"
  # one rank writes no pieces
  mpi 1 run "$scene" --frames 1 --out "$tmp/one" --quiet || fail "mpirun -np 1"
  [ -s "$tmp/one/sheet_000001.vtp" ] || fail "mpirun -np 1 wrote no .vtp"
  n=$(ls "$tmp/one" | grep -cE '_p[0-9]+\.vtp$|\.pvtp$|_pieces\.pvd$')
  [ "$n" = 0 ] || fail "one rank wrote $n piece files"
  ;;
bench)
  mpi 2 bench scaling --mpi --device cpu --quick --only particles --particles 2048 \
    --per-device 1024 --frames 2 >"$tmp/log" 2>&1 ||
    { cat "$tmp/log"; fail "weft bench scaling --mpi"; }
  cat "$tmp/log"
  grep -q "^strong *2 " "$tmp/log" && grep -q "^weak *2 " "$tmp/log" || fail "no scaling rows"
  grep -q "^model, strong scaling" "$tmp/log" || fail "no model"
  "$WEFT_CLI" bench scaling --mpi >/dev/null 2>&1
  [ $? = 2 ] || fail "--mpi outside an MPI job should exit 2"
  ;;
last_good_2 | last_good_3)
  n=${case_#last_good_}
  blow=$(cd "$(dirname "$0")/../scenes" && pwd)/blowup.json
  args=(--set simulation.coupling=false --device cpu:0,cpu:1,cpu:2 --quiet)
  "$WEFT_CLI" run "$blow" "${args[@]}" --out "$tmp/one" >"$tmp/log1" 2>&1
  rc=$?
  [ "$rc" = 1 ] || { cat "$tmp/log1"; fail "one process: exit $rc, expected 1"; }
  one=$(ls "$tmp/one" | grep '^checkpoint_last_good_.*\.wfck$')
  [ -n "$one" ] || fail "one process wrote no last-good checkpoint"
  good=${one#checkpoint_last_good_}
  good=$((10#${good%.wfck}))
  # the particles are distributed (repartitioned) at every frame from the first on
  [ "$good" -ge 2 ] || fail "the blow-up comes before the first repartition (frame $good)"
  mpi "$n" run "$blow" "${args[@]}" --out "$tmp/mpi" >"$tmp/log" 2>&1
  rc=$?
  cat "$tmp/log"
  [ "$rc" = 1 ] || fail "mpirun -np $n: exit $rc, expected 1"
  cmp "$tmp/one/$one" "$tmp/mpi/$one" || fail "rank 0's $one differs from one process's"
  for r in $(seq 1 $((n - 1))); do
    cmp "$tmp/one/$one" "$tmp/mpi/ranks/$r/$one" || fail "rank $r's $one differs"
  done
  cmp <(stats "$tmp/one") <(stats "$tmp/mpi") || fail "stats.csv differs"
  # resumed with the watchdog off, two frames on: one process from its own, 2 ranks from the
  # ranks' checkpoint
  end=$((good + 2))
  resume=(--set simulation.max_speed=0 --frames $end --every $end)
  "$WEFT_CLI" run "$blow" "${args[@]}" "${resume[@]}" --resume "$tmp/one/$one" --out "$tmp/r1" \
    >"$tmp/log1" 2>&1 || { cat "$tmp/log1"; fail "one process resuming"; }
  mpi 2 run "$blow" "${args[@]}" "${resume[@]}" --resume "$tmp/mpi/$one" --out "$tmp/r2" \
    >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "2 ranks resuming"; }
  f=$(printf 'checkpoint_%06d.wfck' $end)
  cmp "$tmp/r1/$f" "$tmp/r2/$f" || fail "the resumed $f differs"
  echo "last good frame $good on $n ranks: one process's checkpoint; resumed to $end: bitwise"
  ;;
*) fail "unknown case $case_" ;;
esac
