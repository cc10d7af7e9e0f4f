/* A plain C test runner: CHECK records a failure and goes on; each test is a function. */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>

extern int check_failures;

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            check_failures++;                                                               \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);        \
        }                                                                                   \
    } while (0)

#define CHECK_EQ(a, b)                                                                      \
    do {                                                                                    \
        long long a_ = (long long)(a), b_ = (long long)(b);                                 \
        if (a_ != b_) {                                                                     \
            check_failures++;                                                               \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, #a, \
                    #b, a_, b_);                                                            \
        }                                                                                   \
    } while (0)

/* The test groups, one per file */
void run_protocol_tests(void (*run)(const char *name, void (*fn)(void)));
void run_servo_tests(void (*run)(const char *name, void (*fn)(void)));
void run_feedback_tests(void (*run)(const char *name, void (*fn)(void)));
void run_app_tests(void (*run)(const char *name, void (*fn)(void)));
int run_vector_tests(const char *dir); /* returns the number of vectors checked */

#endif
