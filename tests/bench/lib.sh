# Shared by the bench scripts (sourced after they cd to the source root).

# The median of the numbers on stdin, one per line.
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# "machine: <CPU model>, <N> cores": every figure names its CPU.
machine_line() {
  echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
}
