/* Message types and payload layouts (firmware/PROTOCOL.md, "Messages"). */
#ifndef MESSAGES_H
#define MESSAGES_H

#include <stdbool.h>
#include <stdint.h>

#include "protocol.h"
#include "feedback.h"
#include "servo.h"

enum {
    MSG_PING = 0x01,
    MSG_SET_TARGETS = 0x02,
    MSG_CONFIG_CHANNEL = 0x03,
    MSG_CONFIG_SYSTEM = 0x04,
    MSG_ENABLE = 0x05,
    MSG_ESTOP = 0x06,
    MSG_CONFIG_FEEDBACK = 0x07,
    MSG_PONG = 0x41,
    MSG_TELEMETRY = 0x42,
    MSG_ERROR = 0x43,
};

/* Telemetry status flags */
enum {
    FLAG_ENABLED = 1u << 0,
    FLAG_ESTOP = 1u << 1,
    FLAG_WATCHDOG_TRIPPED = 1u << 2,
    FLAG_LIMIT_HIT = 1u << 3,
    FLAG_AUTHENTICATED = 1u << 4,
    FLAG_WATCHDOG_LIMP = 1u << 5,
    FLAG_MOVING = 1u << 6,
};

/* Error report codes */
enum {
    ERR_UNKNOWN_TYPE = 1,
    ERR_BAD_PAYLOAD = 2, /* wrong length or a field out of its range */
    ERR_NOT_ARMED = 3,   /* targets refused while e-stopped or tripped */
};

/* PONG payload: host_time_us u64, mcu_time_us u32, boot_id u32 */
enum { MSG_PONG_BOOT_ID = 12, MSG_PONG_LEN = 16 };

/* Telemetry counters, in wire order (PROTOCOL.md, "Counters"); each frame counts in one */
enum {
    CNT_FRAMES_OK,
    CNT_BAD_CRC,
    CNT_BAD_LENGTH,
    CNT_BAD_AUTH,
    CNT_REPLAYED,
    CNT_BAD_PAYLOAD,
    CNT_RX_DROPPED,
    CNT_RX_TIMEOUTS,
    CNT_TX_SKIPPED,
    CNT_TX_DROPPED,
    CNT_COUNT
};

/* Telemetry payload: time u32, flags u16, limit_mask u16, feedback_mask u16, counters,
 * count u8, then arrays */
enum {
    MSG_TELEMETRY_COUNTERS = 10,
    MSG_TELEMETRY_ARRAYS = 11 + 2 * CNT_COUNT,
    MSG_TELEMETRY_LEN = MSG_TELEMETRY_ARRAYS + 4 * SERVO_CHANNELS, /* every channel reported */
};

typedef struct {
    uint64_t host_time_us;
} msg_ping_t;

typedef struct {
    uint64_t host_time_us;
    uint32_t mcu_time_us;
    uint32_t boot_id;
} msg_pong_t;

typedef struct {
    uint16_t duration_ms;
    uint8_t first;
    uint8_t count;
    int16_t target_cdeg[SERVO_CHANNELS];
} msg_set_targets_t;

typedef struct {
    uint8_t channel;
    servo_cal_t cal;
} msg_config_channel_t;

/* CONFIG_FEEDBACK: channel alone switches its feedback off */
typedef struct {
    uint8_t channel;
    bool on;
    feedback_cal_t cal;
} msg_config_feedback_t;

typedef struct {
    uint16_t watchdog_ms;
    uint8_t watchdog_action;
    uint16_t telemetry_period_ms;
    uint16_t servo_speed_cdeg_s;
} msg_config_system_t;

typedef struct {
    uint8_t code;
    uint8_t type;
    uint16_t seq;
} msg_error_t;

typedef struct {
    uint32_t mcu_time_us;
    uint16_t flags;
    uint16_t limit_mask;
    uint16_t feedback_mask; /* bit i: angle_cdeg[i] is measured, else the estimate */
    uint16_t counters[CNT_COUNT];
    uint8_t count;
    int16_t angle_cdeg[SERVO_CHANNELS];
    uint16_t pulse_us[SERVO_CHANNELS];
} msg_telemetry_t;

/* Decoders check the payload length and field ranges; false means a bad payload. */
bool msg_decode_ping(const proto_frame_t *f, msg_ping_t *m);
bool msg_decode_set_targets(const proto_frame_t *f, msg_set_targets_t *m);
bool msg_decode_config_channel(const proto_frame_t *f, msg_config_channel_t *m);
bool msg_decode_config_feedback(const proto_frame_t *f, msg_config_feedback_t *m);
bool msg_decode_config_system(const proto_frame_t *f, msg_config_system_t *m);
bool msg_decode_enable(const proto_frame_t *f, bool *enable);

/* Encoders write the payload and return its length. */
uint8_t msg_encode_pong(const msg_pong_t *m, uint8_t *payload);
uint8_t msg_encode_error(const msg_error_t *m, uint8_t *payload);
uint8_t msg_encode_telemetry(const msg_telemetry_t *m, uint8_t *payload);

#endif
