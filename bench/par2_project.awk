# par2_project.awk: projects par2's time on a whole file from its times on two slices (bench/e2e.sh).
# Every par2 recovery block depends on every source block, so at a fixed block size par2's time
# is t = a n + b n^2 for n bytes (a: the work per byte, reading, hashing and writing; b: the
# products of recovery and source blocks); t / n = a + b n is the line through the two slices.
# A fit with b < 0 (noise) falls back to the larger slice's time per byte, one with a < 0 to its
# time per byte squared. Prints the projected seconds.
#
# Usage: awk -v x1=BYTES -v t1=SECONDS -v x2=BYTES -v t2=SECONDS -v n=BYTES -f par2_project.awk
#        (x1 < x2; the two slices' sizes and times, and the file's size)
BEGIN {
  if (!(x1 > 0 && x2 > x1 && t1 > 0 && t2 > 0 && n > 0)) {
    print "par2_project.awk: need 0 < x1 < x2, t1 > 0, t2 > 0, n > 0" > "/dev/stderr"
    exit 1
  }
  b = (t2 / x2 - t1 / x1) / (x2 - x1)
  a = t1 / x1 - b * x1
  if (b < 0) { b = 0; a = t2 / x2 }
  if (a < 0) { a = 0; b = t2 / (x2 * x2) }
  printf "%.3f\n", a * n + b * n * n
}
