/* Calibration, limits, interpolation and the servo model of core/servo; core/watchdog. */
#include "../core/servo.h"
#include "../core/watchdog.h"
#include "check.h"

static void default_calibration(void)
{
    servo_init(0);
    CHECK_EQ(servo_pulse_us(0, 0), 1500);
    CHECK_EQ(servo_pulse_us(0, 9000), 2500);
    CHECK_EQ(servo_pulse_us(0, -9000), 500);
    CHECK_EQ(servo_pulse_us(0, 4500), 2000);
    CHECK_EQ(servo_pulse_us(0, 1), 1500); /* 0.111 us rounds down */
    CHECK_EQ(servo_pulse_us(0, 5), 1501); /* 0.556 us rounds up */
}

static void reversed_offset_calibration(void)
{
    servo_init(0);
    servo_cal_t cal = {.direction = -1,
                       .zero_offset_cdeg = 350,
                       .min_cdeg = -6000,
                       .max_cdeg = 4500,
                       .pulse_min_us = 900,
                       .pulse_max_us = 2100,
                       .travel_cdeg = 12000};
    CHECK(servo_configure(7, &cal));
    /* servo angle = -joint + 3.5 deg; 1500 us + servo angle * 1200 us / 120 deg */
    CHECK_EQ(servo_pulse_us(7, 0), 1535);
    CHECK_EQ(servo_pulse_us(7, 3000), 1235);
    CHECK_EQ(servo_pulse_us(7, -6000), 2100); /* 2135 clamped to the pulse range */
    CHECK_EQ(servo_pulse_us(0, 0), 1500);     /* other channels unchanged */
}

/* PROTOCOL.md's formula with plain 32-bit division: the reference for the fast path. */
static uint16_t reference_pulse_us(const servo_cal_t *cal, int16_t angle_cdeg)
{
    int32_t servo_cdeg = (int32_t)cal->direction * angle_cdeg + cal->zero_offset_cdeg;
    int32_t den = 2 * (int32_t)cal->travel_cdeg;
    int32_t num = ((int32_t)cal->pulse_min_us + cal->pulse_max_us) * cal->travel_cdeg +
                  2 * servo_cdeg * ((int32_t)cal->pulse_max_us - cal->pulse_min_us) + den / 2;
    int32_t pulse = num < 0 ? 0 : num / den;
    return (uint16_t)(pulse < cal->pulse_min_us   ? cal->pulse_min_us
                      : pulse > cal->pulse_max_us ? cal->pulse_max_us
                                                  : pulse);
}

/* Every angle of +-180 deg under extreme and odd calibrations: the short division gives
 * the formula's pulse exactly. */
static void pulse_matches_the_formula_everywhere(void)
{
    const servo_cal_t cals[] = {
        {1, 0, -18000, 18000, 500, 2500, 1},      /* steepest: clamps almost everywhere */
        {-1, 18000, -18000, 18000, 500, 2500, 36000},
        {1, -17999, -18000, 18000, 500, 501, 7}, /* one-microsecond range */
        {-1, 350, -6000, 4500, 900, 2100, 12000},
        {1, 123, -18000, 18000, 1000, 2000, 9001},
    };
    for (unsigned k = 0; k < sizeof cals / sizeof cals[0]; k++) {
        servo_init(0);
        CHECK(servo_configure(3, &cals[k]));
        unsigned wrong = 0;
        for (int32_t a = -18000; a <= 18000; a++) {
            wrong += servo_pulse_us(3, (int16_t)a) != reference_pulse_us(&cals[k], (int16_t)a);
        }
        CHECK_EQ(wrong, 0);
    }
}

static void inconsistent_calibration_refused(void)
{
    servo_init(0);
    servo_cal_t good = {1, 0, -9000, 9000, 500, 2500, 18000};
    servo_cal_t bad = good;
    bad.direction = 0;
    CHECK(!servo_configure(0, &bad));
    bad = good;
    bad.min_cdeg = 9000;
    CHECK(!servo_configure(0, &bad));
    bad = good;
    bad.pulse_max_us = 2600;
    CHECK(!servo_configure(0, &bad));
    bad = good;
    bad.travel_cdeg = 0;
    CHECK(!servo_configure(0, &bad));
    CHECK(!servo_configure(SERVO_CHANNELS, &good));
    CHECK(servo_configure(0, &good));
}

static void targets_clamped_to_limits(void)
{
    servo_init(0);
    const int16_t targets[3] = {-12000, 3000, 9001};
    CHECK_EQ(servo_set_targets(4, 3, targets, 0, 0), (1 << 4) | (1 << 6));
    CHECK_EQ(servo_command_cdeg(4), -9000);
    CHECK_EQ(servo_command_cdeg(5), 3000);
    CHECK_EQ(servo_command_cdeg(6), 9000);
}

static void interpolation_over_duration(void)
{
    servo_init(0);
    servo_set_speed(0); /* estimate follows the command */
    const int16_t target = 8000;
    servo_set_targets(2, 1, &target, 400, 0);
    servo_update(100000);
    CHECK_EQ(servo_command_cdeg(2), 2000);
    CHECK(servo_moving());
    servo_update(300000);
    CHECK_EQ(servo_command_cdeg(2), 6000);
    servo_hold(300000);
    servo_update(500000);
    CHECK_EQ(servo_command_cdeg(2), 6000); /* held where it was */
    CHECK(!servo_moving());
    CHECK_EQ(servo_estimate_cdeg(2), 6000);
}

/* Every millisecond of moves across +-180 deg, the shortest to the longest duration: the
 * command is start + (goal - start) * floor(elapsed * 2^15 / duration) / 2^15, floored. */
static void interpolation_matches_the_formula_every_millisecond(void)
{
    const servo_cal_t wide = {1, 0, -18000, 18000, 500, 2500, 36000};
    const uint16_t durations[] = {1, 3, 777, 65535};
    for (unsigned k = 0; k < sizeof durations / sizeof durations[0]; k++) {
        servo_init(0);
        CHECK(servo_configure(1, &wide));
        const int16_t start = -18000, goal = 17999;
        servo_set_targets(1, 1, &start, 0, 0);
        servo_set_targets(1, 1, &goal, durations[k], 0);
        unsigned wrong = 0;
        for (uint32_t ms = 0; ms <= durations[k]; ms++) {
            servo_update(ms * 1000u);
            int32_t frac = (int32_t)(((uint32_t)ms << 15) / durations[k]);
            int32_t want = ms < durations[k] ? start + (((goal - start) * frac) >> 15) : goal;
            wrong += servo_command_cdeg(1) != want;
        }
        CHECK_EQ(wrong, 0);
    }
}

static void interpolation_across_clock_wrap(void)
{
    const uint32_t start = 0xffffffffu - 99999u; /* 100 ms before the microsecond clock wraps */
    servo_init(start);
    const int16_t target = -8000;
    servo_set_targets(0, 1, &target, 400, start);
    servo_update(start + 200000u); /* wrapped */
    CHECK_EQ(servo_command_cdeg(0), -4000);
    servo_update(start + 400000u);
    CHECK_EQ(servo_command_cdeg(0), -8000);
}

static void servo_model_slew_limit(void)
{
    servo_init(0);
    servo_set_speed(10000); /* 100 deg/s */
    const int16_t target = 5000;
    servo_set_targets(0, 1, &target, 0, 0);
    servo_update(200000);
    CHECK_EQ(servo_command_cdeg(0), 5000);
    CHECK_EQ(servo_estimate_cdeg(0), 2000);
    servo_update(600000);
    CHECK_EQ(servo_estimate_cdeg(0), 5000);
}

static void watchdog_timeout(void)
{
    watchdog_configure(250, WATCHDOG_LIMP);
    watchdog_arm(1000);
    CHECK(!watchdog_poll(1000 + 249999));
    watchdog_feed(200000);
    CHECK(!watchdog_poll(200000 + 249999));
    CHECK(watchdog_poll(200000 + 250000));
    CHECK(watchdog_tripped());
    CHECK(!watchdog_poll(200000 + 250001)); /* reported once */
    watchdog_arm(500000);
    CHECK(!watchdog_tripped());
    watchdog_configure(0, WATCHDOG_HOLD);
    CHECK(!watchdog_poll(0xffffffffu));
    watchdog_disarm();
}

void run_servo_tests(void (*run)(const char *name, void (*fn)(void)))
{
    run("default_calibration", default_calibration);
    run("reversed_offset_calibration", reversed_offset_calibration);
    run("pulse_matches_the_formula_everywhere", pulse_matches_the_formula_everywhere);
    run("inconsistent_calibration_refused", inconsistent_calibration_refused);
    run("targets_clamped_to_limits", targets_clamped_to_limits);
    run("interpolation_over_duration", interpolation_over_duration);
    run("interpolation_matches_the_formula_every_millisecond",
        interpolation_matches_the_formula_every_millisecond);
    run("interpolation_across_clock_wrap", interpolation_across_clock_wrap);
    run("servo_model_slew_limit", servo_model_slew_limit);
    run("watchdog_timeout", watchdog_timeout);
}
