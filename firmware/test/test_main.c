/* Unit tests of firmware/core on the host: unit_tests <vector dir> */
#include <stdio.h>

#include "check.h"

int check_failures;
static int passed, failed;

static void run(const char *name, void (*fn)(void))
{
    int before = check_failures;
    fn();
    if (check_failures == before) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAIL %s\n", name);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s <vector dir>\n", argv[0]);
        return 2;
    }
    run_protocol_tests(run);
    run_servo_tests(run);
    run_feedback_tests(run);
    run_app_tests(run);
    int before = check_failures;
    int vectors = run_vector_tests(argv[1]);
    if (vectors < 1) {
        fprintf(stderr, "no vectors found in %s\n", argv[1]);
        check_failures++;
    }
    if (check_failures == before) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAIL vectors\n");
    }
    printf("%d vectors checked\n%d passed, %d failed\n", vectors, passed, failed);
    return failed ? 1 : 0;
}
