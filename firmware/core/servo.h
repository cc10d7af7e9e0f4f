/*
 * Joint angle -> servo pulse: per-channel calibration, limits, interpolation over a
 * duration, and a slew-rate model of the servo that estimates where it actually is.
 * Angles in centidegrees [cdeg], pulses in microseconds, times in microseconds.
 */
#ifndef SERVO_H
#define SERVO_H

#include <stdbool.h>
#include <stdint.h>

#define SERVO_CHANNELS 16u
#define SERVO_PULSE_MIN_US 500u
#define SERVO_PULSE_MAX_US 2500u
#define SERVO_ANGLE_LIMIT_CDEG 18000L /* every angle lies within +-180 deg */

typedef struct {
    int8_t direction;         /* +1 or -1 */
    int16_t zero_offset_cdeg; /* servo angle at joint angle 0 */
    int16_t min_cdeg;         /* joint limits; targets are clamped to them */
    int16_t max_cdeg;
    uint16_t pulse_min_us; /* pulse range; its centre is servo angle 0 */
    uint16_t pulse_max_us;
    uint16_t travel_cdeg; /* servo angle swept by the whole pulse range */
} servo_cal_t;

/* Default calibration: 500-2500 us over 180 deg, limits +-90 deg, slew 600 deg/s. */
void servo_init(uint32_t now_us);

/* Returns false (and changes nothing) if cal is inconsistent or channel out of range. */
bool servo_configure(uint8_t channel, const servo_cal_t *cal);

/* Slew rate of the servo model [cdeg/s]; 0 leaves the estimate at the command. */
void servo_set_speed(uint16_t cdeg_per_s);

/* Move channels first..first+count-1 to targets over duration_ms (0: at once). Returns the
 * mask of channels whose target was clamped to a limit. */
uint16_t servo_set_targets(uint8_t first, uint8_t count, const int16_t *target_cdeg,
                           uint16_t duration_ms, uint32_t now_us);

/* Stop every motion where it is now. */
void servo_hold(uint32_t now_us);

/* Advance interpolation and the servo model to now_us. */
void servo_update(uint32_t now_us);

/* A calibration, the speed or a hold changed the inputs since the last servo_update. */
bool servo_changed(void);

int16_t servo_command_cdeg(uint8_t channel);
int16_t servo_estimate_cdeg(uint8_t channel);
bool servo_moving(void);

/* Pulse width for a joint angle under a channel's calibration (PROTOCOL.md, "Calibration"). */
uint16_t servo_pulse_us(uint8_t channel, int16_t angle_cdeg);

#endif
