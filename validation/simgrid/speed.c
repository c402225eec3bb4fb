/* The SimGrid side of validation/simgrid/speed.sh: one MPI_Allreduce in place of COUNT random
 * floats per rank (MPI_FLOAT, MPI_SUM), the data filled before and every element of every rank
 * checked after. Build with smpicc, run with smpirun (--cfg=smpi/allreduce:lr for the ring).
 *
 *   speed COUNT
 *
 * Data: element i of rank r is (r + 1) * u(i), u(i) a pseudo-random integer in [-2048, 2048)
 * (SplitMix64 of i). Every partial sum of any subset of ranks is an integer of magnitude below
 * 2080 * 2048 < 2^24, so float addition is exact in any order, and every rank checks every element
 * of its result against P (P + 1) / 2 * u(i) exactly: one hash per element to fill, one to check,
 * as allreduce-sim's generator costs one per element. Rank 0 prints the simulated time (the last
 * rank's finish, as allreduce-sim reports) and whether every element of every rank was right.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static inline uint64_t mix(uint64_t z)
{
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* u(i): an integer in [-2048, 2048), from the top 12 bits of a SplitMix64 word. */
static inline int u(long i) { return (int)(mix((uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull) >> 52) - 2048; }

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (argc != 2) {
    if (rank == 0)
      fprintf(stderr, "usage: %s COUNT\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  long count = atol(argv[1]);
  float* buf = malloc(sizeof(float) * (count > 0 ? count : 1));
  for (long i = 0; i < count; i++)
    buf[i] = (float)((rank + 1) * u(i));

  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double span = MPI_Wtime() - start;

  long bad = 0;
  float total = (float)(nranks * (nranks + 1) / 2);
  for (long i = 0; i < count; i++)
    bad += buf[i] != total * (float)u(i);

  double max_span = 0;
  long all_bad = 0;
  MPI_Reduce(&span, &max_span, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("time_s=%.17g wrong=%ld checked=%ld\n", max_span, all_bad, count * (long)nranks);
    fflush(stdout);
  }
  free(buf);
  MPI_Finalize();
  return (rank == 0 && all_bad != 0) ? 3 : 0;
}
