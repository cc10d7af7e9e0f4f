/* core/feedback: ADC counts -> joint angle through the two-point calibration (rounding,
 * clamping, reversed pots), the filter's step response, and the channel mask. */
#include "../core/feedback.h"
#include "check.h"
#include "fake_hal.h"

/* 100 counts at -90 deg, 900 at +90 deg: 22.5 cdeg a count */
static const feedback_cal_t cal = {100, -9000, 900, 9000};

static uint16_t counts(uint16_t adc)
{
    return (uint16_t)(adc << FEEDBACK_FRAC);
}

static void convert_two_points(void)
{
    CHECK_EQ(feedback_convert(&cal, counts(100)), -9000);
    CHECK_EQ(feedback_convert(&cal, counts(900)), 9000);
    CHECK_EQ(feedback_convert(&cal, counts(500)), 0);
    CHECK_EQ(feedback_convert(&cal, counts(501)), 23); /* a half rounds away from angle_lo */
    CHECK_EQ(feedback_convert(&cal, counts(499)), -22);
    CHECK_EQ(feedback_convert(&cal, counts(500) + 16), 11); /* half a count: 11.25 */
    /* reversed pot: the angle falls as the reading rises */
    const feedback_cal_t rev = {112, 9500, 901, -9500};
    CHECK_EQ(feedback_convert(&rev, counts(112)), 9500);
    CHECK_EQ(feedback_convert(&rev, counts(901)), -9500);
    CHECK_EQ(feedback_convert(&rev, counts(506)), 12); /* 9500 - 394 * 19000 / 789 = 12.04 */
}

/* PROTOCOL.md's formula with plain 32-bit division: the reference for the fast path. */
static int16_t reference_convert(const feedback_cal_t *c, uint16_t value)
{
    int32_t lo = (int32_t)c->adc_lo << FEEDBACK_FRAC;
    int32_t span = ((int32_t)c->adc_hi << FEEDBACK_FRAC) - lo;
    int32_t x = value < lo ? lo : value > lo + span ? lo + span : value;
    int32_t num = (x - lo) * ((int32_t)c->angle_hi_cdeg - c->angle_lo_cdeg);
    return (int16_t)(c->angle_lo_cdeg + (num + (num >= 0 ? span / 2 : -span / 2)) / span);
}

/* Every filtered value under extreme and odd calibrations: the short division gives the
 * formula's angle exactly. */
static void convert_matches_the_formula_everywhere(void)
{
    const feedback_cal_t cals[] = {
        {0, -18000, 1023, 18000}, {0, 18000, 1, -18000}, {1022, -18000, 1023, 18000},
        {100, 9000, 900, -9000},  {37, 5, 991, 6},        {0, 0, 1023, 1023},
    };
    for (unsigned k = 0; k < sizeof cals / sizeof cals[0]; k++) {
        unsigned wrong = 0;
        for (uint32_t v = 0; v <= (FEEDBACK_ADC_MAX << FEEDBACK_FRAC); v++) {
            wrong += feedback_convert(&cals[k], (uint16_t)v) !=
                     reference_convert(&cals[k], (uint16_t)v);
        }
        CHECK_EQ(wrong, 0);
    }
}

static void convert_clamps_to_the_calibrated_range(void)
{
    CHECK_EQ(feedback_convert(&cal, 0), -9000);
    CHECK_EQ(feedback_convert(&cal, counts(99)), -9000);
    CHECK_EQ(feedback_convert(&cal, counts(901)), 9000);
    CHECK_EQ(feedback_convert(&cal, counts(1023)), 9000);
    const feedback_cal_t full = {0, -18000, 1023, 18000}; /* the widest: no overflow */
    CHECK_EQ(feedback_convert(&full, counts(1023)), 18000);
    CHECK_EQ(feedback_convert(&full, 0), -18000);
}

static void configure_validates(void)
{
    fake_reset();
    feedback_init(0);
    const feedback_cal_t bad[] = {
        {500, 0, 500, 9000},       /* adc_lo == adc_hi */
        {600, 0, 500, 9000},       /* adc_lo > adc_hi */
        {0, 0, 1024, 9000},        /* beyond 10 bits */
        {0, 4500, 1023, 4500},     /* one angle for two readings */
        {0, -18001, 1023, 0},      /* beyond -180 deg */
        {0, 0, 1023, 18001},       /* beyond +180 deg */
    };
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(!feedback_configure(3, &bad[i]));
    }
    CHECK(!feedback_configure(SERVO_CHANNELS, &cal));
    CHECK_EQ(feedback_channels(), 0);
    CHECK(feedback_configure(3, &cal));
    CHECK(feedback_configure(15, &cal));
    CHECK_EQ(feedback_channels(), 0x8008);
    CHECK_EQ(fake_adc_mask, 0x8008);
    CHECK(feedback_configure(3, NULL));
    CHECK_EQ(fake_adc_mask, 0x8000);
}

/* The first conversion starts the filter; then y += (x - y) / 4 per millisecond: a step reaches
 * 1 - 0.75^n of its height after n ms (time constant 3.5 ms). */
static void filter_step_response(void)
{
    fake_reset();
    feedback_init(0);
    CHECK(feedback_configure(0, &cal));
    CHECK(feedback_configure(1, &cal)); /* configured, never sampled below */
    fake_adc[0] = 100;
    feedback_update(500);
    CHECK_EQ(feedback_mask(), 0); /* no filter step before the first millisecond */
    feedback_update(1000);
    CHECK_EQ(feedback_mask(), 0x0003); /* both took a sample from the fake ADC */
    CHECK_EQ(feedback_angle_cdeg(0), -9000);
    fake_adc[0] = 900; /* a step of 180 deg */
    const int16_t expected[] = {-4500, -1125, 1406, 3305, 4728}; /* -9000 + 18000 (1-.75^n) */
    for (int n = 0; n < 5; n++) {
        feedback_update(2000u + 1000u * (uint32_t)n);
        int16_t a = feedback_angle_cdeg(0);
        CHECK(a >= expected[n] && a - expected[n] <= 3); /* each step rounds up < 1/32 count */
    }
    for (uint32_t t = 7000; t < 60000; t += 1000) {
        feedback_update(t);
    }
    CHECK_EQ(feedback_angle_cdeg(0), 9000); /* settled exactly */
    CHECK(feedback_configure(0, NULL));
    CHECK_EQ(feedback_mask(), 0x0002);
}

void run_feedback_tests(void (*run)(const char *name, void (*fn)(void)))
{
    run("convert_two_points", convert_two_points);
    run("convert_matches_the_formula_everywhere", convert_matches_the_formula_everywhere);
    run("convert_clamps_to_the_calibrated_range", convert_clamps_to_the_calibrated_range);
    run("configure_validates", configure_validates);
    run("filter_step_response", filter_step_response);
}
