#!/usr/bin/env bash
# `mpirun -np N weft run` against one process (label mpi): run as `test_mpi_run.sh CASE`, with
# WEFT_CLI (the weft program), MPIEXEC (mpirun) and WEFT_SCENES (scenes/) in the environment.
#   same_2, same_3, same_4  scenes/split_mixed.json (particles and both cloths split over the ranks),
#                           10 frames: stats.csv (but its ms_per_frame timing column), every .vtp
#                           and .ply byte-identical to one process with the same devices (3; 4 for
#                           same_4), the final checkpoint a manifest and one piece a rank; rank
#                           r > 0 writes no files of its own (its <out>/ranks/<r> stays empty);
#                           same_3 also with WEFT_MPI_HALO=staged (host copies instead of MPI on
#                           the buffers) and refuses a WEFT_MPI_HALO that is none of
#                           auto/staged/direct
#   resume_3_to_2           3 ranks write a checkpoint at frame 5 (pieces); 2 ranks resume it to
#                           frame 10 (the .vtp, .ply and stats row the one-process run's) and write
#                           theirs as 2 pieces; one process resumes those to frame 12: its
#                           checkpoint is the one-process run's, byte for byte
#   ckpt_pieces             3 ranks write checkpoint_000005.wfck as a manifest and 3 pieces
#                           (.p0 .p1 .p2); the manifest holds no particle rows (no
#                           "particles/pos", a fifth of the pieces' size at most); resumed on 2
#                           ranks, on 1 (mpirun -np 1) and in one process without mpirun, frame 10
#                           is the uninterrupted one-process run's: .vtp, .ply and stats.csv's row
#                           byte for byte, and the one-process checkpoints at 10 the same file
#   ckpt_pieces_bad         a missing piece, a corrupt one (a byte flipped) and another piece in
#                           its place are refused (exit 1) with a message naming the piece's
#                           file, in one process and on 2 ranks; a rank that cannot write its
#                           piece (a directory in its place) stops every rank (exit 1), its
#                           message naming the rank and the file, and leaves no manifest and no
#                           piece
#   rank_fails              a health check that fails mid-run (simulation.max_speed) stops every
#                           rank at the same frame: exit 1 everywhere, messages naming the rank and
#                           the reason; and one rank alone failing (its output directory) stops
#                           both, the other naming it
#   sigterm                 SIGTERM to the ranks: every rank checkpoints after the same frame (its
#                           piece beside rank 0's manifest; nothing in <out>/ranks/1) and exits 143
#   pieces                  3 ranks: each writes its piece of the particles' .vtp (the particles its
#                           partitions own, in id order), rank 0 the .pvtp and <object>_pieces.pvd;
#                           the pieces' ids are disjoint and with their values make the whole .vtp;
#                           each cloth's pieces (the triangles whose lowest vertex the rank owns,
#                           with their vertices) hold every triangle once and the whole .vtp's
#                           values at each vertex; a cloth every rank runs whole is rank 0's
#                           piece alone; one rank writes no pieces
#   bench                   mpirun -np 2 weft bench scaling --mpi --quick: its rows and its model,
#                           then the cloth with contact over the ranks: its rows and CSV names
#   last_good_2, last_good_3  tests/scenes/blowup.json (3 partitions) blows up at frame 14, long
#                           after the first repartition: every rank stops at the same frame and
#                           writes checkpoint_last_good_000013.wfck byte-identical to one
#                           process's (the verdict is agreed before any snapshot is taken, the
#                           snapshot gathered over the ranks), and resuming it on 2 ranks gives
#                           the one-process resume's .vtp files and stats row two frames on, byte
#                           for byte
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

# The checkpoint of frame $2 in $1 is a manifest and $3 pieces beside it, no more.
pieces_of() { # dir frame ranks
  local m k
  m=$(printf '%s/checkpoint_%06d' "$1" "$2")
  [ -s "$m.wfck" ] || fail "no manifest $m.wfck"
  for k in $(seq 0 $(($3 - 1))); do
    [ -s "$m.p$k.wfck" ] || fail "no piece $m.p$k.wfck"
  done
  [ ! -e "$m.p$3.wfck" ] || fail "more than $3 pieces of $m.wfck"
}

# Frame 10's .vtp and .ply files and stats.csv's row of frame 10 in $2 are those in $1.
same_frame_10() { # dir_a dir_b
  local f n=0
  for f in "$1"/*_000010.vtp "$1"/*_000010.ply; do
    [ -e "$f" ] || continue
    cmp "$f" "$2/$(basename "$f")" || fail "$2/$(basename "$f") differs"
    n=$((n + 1))
  done
  [ "$n" -ge 3 ] || fail "only $n files of frame 10 compared"
  cmp <(stats "$1" | grep '^10,') <(stats "$2" | grep '^10,') ||
    fail "stats.csv's row of frame 10 differs in $2"
}

same_outputs() { # dir_a dir_b: b over MPI ranks
  [ -s "$1/stats.csv" ] || fail "$1/stats.csv missing"
  cmp <(stats "$1") <(stats "$2") || fail "stats.csv differs between $1 and $2"
  local n=0
  for f in "$1"/*.vtp "$1"/*.ply; do
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
  pieces_of "$tmp/mpi" 10 "$n"
  # the other ranks wrote nothing of their own (outputs.discard) but their pieces
  [ -z "$(ls -A "$tmp/mpi/ranks/1")" ] || fail "rank 1 wrote $(ls "$tmp/mpi/ranks/1" | head -3)"
  if [ "$n" = 3 ]; then # halos through host copies (WEFT_MPI_HALO) give the same bytes
    WEFT_MPI_HALO=staged mpi 3 run "$scene" --frames 10 --out "$tmp/staged" --quiet ||
      fail "mpirun -np 3, staged halos"
    same_outputs "$tmp/one" "$tmp/staged"
    pieces_of "$tmp/staged" 10 3
    WEFT_MPI_HALO=sideways "$WEFT_CLI" run "$scene" --frames 1 --out "$tmp/bad" --quiet \
      2>"$tmp/err"
    rc=$?
    [ "$rc" = 2 ] && grep -q "WEFT_MPI_HALO='sideways'" "$tmp/err" ||
      fail "a bad WEFT_MPI_HALO: exit $rc, $(cat "$tmp/err")"
  fi
  ;;
resume_3_to_2)
  "$WEFT_CLI" run "$scene" --frames 12 --out "$tmp/one" --quiet --every 5 || fail "one process"
  mpi 3 run "$scene" --frames 5 --out "$tmp/a" --quiet --every 5 || fail "3 ranks"
  mpi 2 run "$scene" --frames 10 --out "$tmp/b" --quiet --every 5 \
    --resume "$tmp/a/checkpoint_000005.wfck" ||
    fail "2 ranks resuming"
  same_frame_10 "$tmp/one" "$tmp/b"
  pieces_of "$tmp/b" 10 2
  # the 2 ranks' pieces, resumed in one process: two frames on, the one-process checkpoint
  "$WEFT_CLI" run "$scene" --frames 12 --out "$tmp/c" --quiet --every 5 \
    --resume "$tmp/b/checkpoint_000010.wfck" || fail "one process resuming 2 ranks' pieces"
  cmp "$tmp/one/checkpoint_000012.wfck" "$tmp/c/checkpoint_000012.wfck" ||
    fail "the checkpoint at 12 differs"
  echo "resumed on 2 ranks from 3, then in one process from 2: bitwise"
  ;;
ckpt_pieces)
  "$WEFT_CLI" run "$scene" --frames 10 --out "$tmp/one" --quiet --every 5 || fail "one process"
  mpi 3 run "$scene" --frames 5 --out "$tmp/a" --quiet --every 5 || fail "3 ranks"
  pieces_of "$tmp/a" 5 3
  m=$tmp/a/checkpoint_000005
  # the particles' rows are in the pieces only: the manifest is the rest (cloths, scene, clocks)
  ! grep -qa 'particles/pos' "$m.wfck" || fail "the manifest holds particles/pos"
  grep -qa 'particles/history' "$m.p1.wfck" || fail "piece 1 holds no particles/history"
  mb=$(stat -c %s "$m.wfck")
  pb=$(($(stat -c %s "$m.p0.wfck") + $(stat -c %s "$m.p1.wfck") + $(stat -c %s "$m.p2.wfck")))
  [ $((5 * mb)) -le "$pb" ] || fail "the manifest is $mb bytes, the pieces $pb"
  [ -z "$(ls -A "$tmp/a/ranks/1")" ] || fail "rank 1 wrote into its own directory"
  mpi 2 run "$scene" --frames 10 --out "$tmp/b2" --quiet --every 5 --resume "$m.wfck" ||
    fail "2 ranks resuming"
  mpi 1 run "$scene" --frames 10 --out "$tmp/b1" --quiet --every 5 --resume "$m.wfck" ||
    fail "mpirun -np 1 resuming"
  "$WEFT_CLI" run "$scene" --frames 10 --out "$tmp/b0" --quiet --every 5 --resume "$m.wfck" ||
    fail "one process resuming"
  for d in b2 b1 b0; do same_frame_10 "$tmp/one" "$tmp/$d"; done
  pieces_of "$tmp/b2" 10 2
  for d in b1 b0; do
    cmp "$tmp/one/checkpoint_000010.wfck" "$tmp/$d/checkpoint_000010.wfck" ||
      fail "$d's checkpoint at 10 differs"
    [ ! -e "$tmp/$d/checkpoint_000010.p0.wfck" ] || fail "one process wrote pieces"
  done
  echo "manifest $mb bytes, pieces $pb; resumed on 2 ranks, 1 rank, one process: bitwise"
  ;;
ckpt_pieces_bad)
  mpi 3 run "$scene" --frames 5 --out "$tmp/a" --quiet --every 5 || fail "3 ranks"
  m=$tmp/a/checkpoint_000005
  cp "$m.p1.wfck" "$tmp/p1"
  refused() { # what: one process and 2 ranks exit 1 naming piece 1's file
    local rc
    "$WEFT_CLI" run "$scene" --frames 10 --out "$tmp/x" --quiet --resume "$m.wfck" 2>"$tmp/err"
    rc=$?
    cat "$tmp/err"
    [ "$rc" = 1 ] && grep -q "checkpoint_000005.p1.wfck" "$tmp/err" ||
      fail "$1: one process exits $rc"
    mpi 2 run "$scene" --frames 10 --out "$tmp/y" --quiet --resume "$m.wfck" >"$tmp/err" 2>&1
    rc=$?
    [ "$rc" = 1 ] && [ "$(grep -c "rank [01] of 2: .*checkpoint_000005.p1.wfck" "$tmp/err")" = 2 ] ||
      { cat "$tmp/err"; fail "$1: 2 ranks exit $rc"; }
    [ ! -e "$tmp/x/stats.csv" ] && [ ! -e "$tmp/y/stats.csv" ] || fail "$1: outputs were written"
  }
  rm "$m.p1.wfck"
  refused "a missing piece"
  cp "$tmp/p1" "$m.p1.wfck"
  python3 -c 'import os, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(os.path.getsize(sys.argv[1]) // 2); b = f.read(1); f.seek(-1, 1); f.write(bytes([b[0] ^ 1]))' \
    "$m.p1.wfck"
  refused "a corrupt piece"
  grep -q "corrupt" "$tmp/err" || fail "a corrupt piece is not called corrupt"
  cp "$m.p2.wfck" "$m.p1.wfck"
  refused "piece 2 in place of piece 1"
  grep -q "not piece 1 of this checkpoint" "$tmp/err" || fail "another piece is not named so"
  # rank 1 cannot write its piece: every rank stops, no manifest, no piece left
  mkdir -p "$tmp/w/checkpoint_000005.p1.wfck"
  mpi 3 run "$scene" --frames 5 --out "$tmp/w" --quiet --every 5 >"$tmp/log" 2>&1
  rc=$?
  cat "$tmp/log"
  [ "$rc" = 1 ] || fail "a piece that cannot be written: exit $rc"
  grep -q "MPI rank 1 of 3: piece '.*checkpoint_000005.p1.wfck'" "$tmp/log" ||
    fail "rank 1 does not name itself and its piece"
  grep -q "MPI rank 1 failed to write its piece" "$tmp/log" || fail "the others do not name rank 1"
  [ "$(ls "$tmp/w" | grep -c '^checkpoint_')" = 1 ] || fail "left: $(ls "$tmp/w" | grep '^checkpoint_')"
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
  # one checkpoint: rank 0's manifest and both ranks' pieces beside it, nothing in ranks/1; both
  # ranks name it (they stopped after the same frame)
  c=$(ls "$tmp/s" | grep '^checkpoint_[0-9]*\.wfck$')
  [ "$(echo "$c" | wc -w)" = 1 ] || fail "manifests: $c"
  pieces_of "$tmp/s" "$((10#$(echo "$c" | tr -dc 0-9)))" 2
  [ -z "$(ls "$tmp/s/ranks/1")" ] || fail "rank 1 wrote $(ls "$tmp/s/ranks/1")"
  [ "$(grep -c "checkpoint written to $tmp/s/$c" "$tmp/log")" = 2 ] ||
    fail "the ranks do not both name $c"
  echo "SIGTERM: both ranks checkpointed $c (2 pieces) and exited 143"
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
  # the cloth (with contact) over the ranks: rows of both modes, the CSV names them
  mpi 2 bench scaling --mpi --device cpu --quick --only cloth --cloth 24 --cloth-per-device 16 \
    --cloth-contact --frames 2 --csv "$tmp/c.csv" --machine t >"$tmp/log" 2>&1 ||
    { cat "$tmp/log"; fail "weft bench scaling --mpi --only cloth"; }
  cat "$tmp/log"
  grep -q "^strong *2 *24x24 " "$tmp/log" && grep -q "^weak *2 *32x16 " "$tmp/log" ||
    fail "no cloth rows"
  grep -q "^model, strong" "$tmp/log" && fail "a particle model with --only cloth"
  grep -q ",mpi_strong_c24x24_contact_ranks2,ms_per_frame," "$tmp/c.csv" || fail "no cloth CSV"
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
  resume=(--set simulation.max_speed=0 --frames $end --every $end --set 'outputs.formats=["csv","vtk"]')
  "$WEFT_CLI" run "$blow" "${args[@]}" "${resume[@]}" --resume "$tmp/one/$one" --out "$tmp/r1" \
    >"$tmp/log1" 2>&1 || { cat "$tmp/log1"; fail "one process resuming"; }
  mpi 2 run "$blow" "${args[@]}" "${resume[@]}" --resume "$tmp/mpi/$one" --out "$tmp/r2" \
    >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "2 ranks resuming"; }
  # (2 ranks write their checkpoint as pieces: the frame's .vtp files and stats row instead)
  n=0
  for f in "$tmp/r1"/*_$(printf '%06d' $end).vtp; do
    cmp "$f" "$tmp/r2/$(basename "$f")" || fail "the resumed $(basename "$f") differs"
    n=$((n + 1))
  done
  [ "$n" -ge 2 ] || fail "only $n .vtp files compared"
  cmp <(stats "$tmp/r1" | tail -1) <(stats "$tmp/r2" | tail -1) || fail "the resumed row differs"
  pieces_of "$tmp/r2" $end 2
  echo "last good frame $good on $n ranks: one process's checkpoint; resumed to $end: bitwise"
  ;;
*) fail "unknown case $case_" ;;
esac
