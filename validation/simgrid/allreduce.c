/* Validation program for allreduce-sim against SimGrid/SMPI. Build with smpicc, run with smpirun.
 *
 *   allreduce allreduce COUNT   MPI_Allreduce(MPI_IN_PLACE, buf, COUNT, MPI_FLOAT, MPI_SUM) on every rank
 *   allreduce star COUNT        the star (reduce to rank 0, broadcast from it), as allreduce-sim's `star`
 *   allreduce p2p COUNT         every rank r > 0 sends COUNT floats to rank 0 at once; one line per message
 *
 * Every rank starts the timed operation at the same simulated instant T0: after an MPI_Barrier each
 * rank sleeps until T0 (sg_actor_sleep_until), because the barrier lets ranks go at different
 * times. The reported time is max over ranks of (end - T0), where end is MPI_Wtime() right after the
 * operation: the time of the last rank to finish, which is what allreduce-sim reports. The times and
 * checks are collected with MPI_Reduce only after every rank has slept until T1, long after the last
 * rank has finished: sends are eager, so a rank that finished early would otherwise inject its
 * MPI_Reduce messages into links the timed operation is still using.
 *
 * Data: rank r holds (r+1) * (i % 7 + 1) at element i. Every partial sum is an integer below 2^24, so
 * float addition is exact in any order and the result, P(P+1)/2 * (i % 7 + 1), is checked exactly on
 * every element of every rank.
 */
#include <mpi.h>
#include <simgrid/actor.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 0.01 /* simulated seconds; the barrier must be over by then (checked) */
#define T1 1.01 /* every rank waits until then before the (untimed) collection of the results */

static float value(int rank, long i) { return (float)((rank + 1) * (int)(i % 7 + 1)); }

static int check(const float* buf, long count, int nranks)
{
  float total = (float)(nranks * (nranks + 1) / 2);
  for (long i = 0; i < count; i++)
    if (buf[i] != total * (float)(i % 7 + 1))
      return 0;
  return 1;
}

static void start_together(void)
{
  MPI_Barrier(MPI_COMM_WORLD);
  double now = MPI_Wtime();
  if (now >= T0) {
    fprintf(stderr, "barrier ended at %g >= T0 = %g: raise T0\n", now, T0);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  sg_actor_sleep_until(T0);
}

/* Star allreduce, as allreduce-sim's `star`: every rank r > 0 sends its vector to 0; rank 0 adds
 * them (in rank order, after all have arrived) and sends the sum to every rank at once. */
static void star(float* buf, long count, int rank, int nranks)
{
  const int up = 10, down = 11;
  if (rank == 0) {
    float* tmp = malloc(sizeof(float) * count * (nranks - 1));
    MPI_Request* req = malloc(sizeof(MPI_Request) * (nranks - 1));
    for (int r = 1; r < nranks; r++)
      MPI_Irecv(tmp + (r - 1) * count, (int)count, MPI_FLOAT, r, up, MPI_COMM_WORLD, &req[r - 1]);
    MPI_Waitall(nranks - 1, req, MPI_STATUSES_IGNORE);
    for (int r = 1; r < nranks; r++)
      for (long i = 0; i < count; i++)
        buf[i] += tmp[(r - 1) * count + i];
    for (int r = 1; r < nranks; r++)
      MPI_Isend(buf, (int)count, MPI_FLOAT, r, down, MPI_COMM_WORLD, &req[r - 1]);
    MPI_Waitall(nranks - 1, req, MPI_STATUSES_IGNORE);
    free(tmp);
    free(req);
  } else {
    MPI_Send(buf, (int)count, MPI_FLOAT, 0, up, MPI_COMM_WORLD);
    MPI_Recv(buf, (int)count, MPI_FLOAT, 0, down, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
}

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (argc != 3) {
    if (rank == 0)
      fprintf(stderr, "usage: %s allreduce|star|p2p COUNT\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const char* mode = argv[1];
  long count = atol(argv[2]);
  float* buf = malloc(sizeof(float) * (count > 0 ? count : 1));
  for (long i = 0; i < count; i++)
    buf[i] = value(rank, i);

  int ok = 1;
  double end = T0;
  if (strcmp(mode, "allreduce") == 0 || strcmp(mode, "star") == 0) {
    start_together();
    if (mode[0] == 'a')
      MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else
      star(buf, count, rank, nranks);
    end = MPI_Wtime();
    ok = check(buf, count, nranks);
  } else if (strcmp(mode, "p2p") == 0) {
    /* Every rank r > 0 sends to rank 0 at T0; rank 0 reports when each message has arrived. */
    start_together();
    if (rank == 0) {
      float* tmp = malloc(sizeof(float) * count * (nranks - 1));
      MPI_Request* req = malloc(sizeof(MPI_Request) * (nranks - 1));
      double* arrival = malloc(sizeof(double) * nranks);
      for (int r = 1; r < nranks; r++)
        MPI_Irecv(tmp + (r - 1) * count, (int)count, MPI_FLOAT, r, 7, MPI_COMM_WORLD, &req[r - 1]);
      for (int k = 1; k < nranks; k++) {
        int idx;
        MPI_Waitany(nranks - 1, req, &idx, MPI_STATUS_IGNORE);
        arrival[idx + 1] = MPI_Wtime();
      }
      for (int r = 1; r < nranks; r++) {
        for (long i = 0; i < count; i++)
          if (tmp[(r - 1) * count + i] != value(r, i))
            ok = 0;
        printf("flow src=%d dst=0 time_s=%.17g\n", r, arrival[r] - T0);
      }
      free(tmp);
      free(req);
      free(arrival);
    } else {
      MPI_Send(buf, (int)count, MPI_FLOAT, 0, 7, MPI_COMM_WORLD);
    }
    end = MPI_Wtime();
  } else {
    if (rank == 0)
      fprintf(stderr, "unknown mode %s\n", mode);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  if (end >= T1) {
    fprintf(stderr, "rank %d finished at %g >= T1 = %g: raise T1\n", rank, end, T1);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  sg_actor_sleep_until(T1);
  double span = end - T0, max_span = 0;
  int all_ok = 0;
  MPI_Reduce(&span, &max_span, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("time_s=%.17g ok=%d\n", max_span, all_ok);
    fflush(stdout);
  }
  free(buf);
  MPI_Finalize();
  return (rank == 0 && !all_ok) ? 3 : 0;
}
