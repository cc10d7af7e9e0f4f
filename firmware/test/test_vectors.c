/* Check core/protocol and core/messages against every shared vector in a directory. */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "../core/messages.h"
#include "../core/protocol.h"
#include "check.h"

#define MAX_FIELDS 24
#define MAX_VALUES 32

typedef struct {
    char name[32];
    long long v[MAX_VALUES];
    int n;
} field_t;

typedef struct {
    field_t f[MAX_FIELDS];
    int nf;
    uint8_t frame[PROTO_MAX_FRAME];
    size_t frame_len;
    uint8_t key[SIPHASH_KEY_LEN];
    bool has_key;
    char message[32];
} vector_t;

typedef struct {
    int frames;
    proto_frame_t frame;
    uint8_t payload[PROTO_MAX_PAYLOAD];
} capture_t;

static const field_t *field(const vector_t *v, const char *name)
{
    for (int i = 0; i < v->nf; i++) {
        if (!strcmp(v->f[i].name, name)) {
            return &v->f[i];
        }
    }
    fprintf(stderr, "vector has no field %s\n", name);
    check_failures++;
    static const field_t missing;
    return &missing;
}

static long long value(const vector_t *v, const char *name)
{
    return field(v, name)->v[0];
}

static int parse_file(const char *path, vector_t *v)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        return -1;
    }
    memset(v, 0, sizeof *v);
    char line[1024];
    while (fgets(line, sizeof line, fp)) {
        char *save, *name = strtok_r(line, " \n", &save);
        if (!name || name[0] == '#') {
            continue;
        }
        if (!strcmp(name, "message")) {
            snprintf(v->message, sizeof v->message, "%s", strtok_r(NULL, " \n", &save));
        } else if (!strcmp(name, "frame")) {
            for (char *t; (t = strtok_r(NULL, " \n", &save)) && v->frame_len < PROTO_MAX_FRAME;) {
                v->frame[v->frame_len++] = (uint8_t)strtoul(t, NULL, 16);
            }
        } else if (!strcmp(name, "frame_key")) {
            const char *hex = strtok_r(NULL, " \n", &save);
            for (size_t i = 0; i < SIPHASH_KEY_LEN; i++) {
                char byte[3] = {hex[2 * i], hex[2 * i + 1], 0};
                v->key[i] = (uint8_t)strtoul(byte, NULL, 16);
            }
            v->has_key = true;
        } else if (v->nf < MAX_FIELDS) {
            field_t *f = &v->f[v->nf++];
            snprintf(f->name, sizeof f->name, "%s", name);
            for (char *t; (t = strtok_r(NULL, " \n", &save)) && f->n < MAX_VALUES;) {
                f->v[f->n++] = t[0] == '-' ? strtoll(t, NULL, 10) : (long long)strtoull(t, NULL, 10);
            }
        }
    }
    fclose(fp);
    return 0;
}

static void capture(void *ctx, const proto_frame_t *f)
{
    capture_t *c = ctx;
    c->frames++;
    c->frame = *f;
    memcpy(c->payload, f->payload, f->len);
    c->frame.payload = c->payload;
}

static void check_array(const vector_t *v, const char *name, const int16_t *a, int n)
{
    const field_t *f = field(v, name);
    CHECK_EQ(f->n, n);
    for (int i = 0; i < n && i < f->n; i++) {
        CHECK_EQ(a[i], f->v[i]);
    }
}

/* Host -> MCU: the firmware decodes these. */
static void check_decoded(const vector_t *v, const proto_frame_t *f)
{
    if (!strcmp(v->message, "Ping")) {
        msg_ping_t m;
        CHECK(msg_decode_ping(f, &m));
        CHECK_EQ(m.host_time_us, value(v, "host_time_us"));
    } else if (!strcmp(v->message, "SetTargets")) {
        msg_set_targets_t m;
        CHECK(msg_decode_set_targets(f, &m));
        CHECK_EQ(m.duration_ms, value(v, "duration_ms"));
        CHECK_EQ(m.first, value(v, "first"));
        check_array(v, "targets_cdeg", m.target_cdeg, m.count);
    } else if (!strcmp(v->message, "ConfigChannel")) {
        msg_config_channel_t m;
        CHECK(msg_decode_config_channel(f, &m));
        CHECK_EQ(m.channel, value(v, "channel"));
        CHECK_EQ(m.cal.direction, value(v, "direction"));
        CHECK_EQ(m.cal.zero_offset_cdeg, value(v, "zero_offset_cdeg"));
        CHECK_EQ(m.cal.min_cdeg, value(v, "min_cdeg"));
        CHECK_EQ(m.cal.max_cdeg, value(v, "max_cdeg"));
        CHECK_EQ(m.cal.pulse_min_us, value(v, "pulse_min_us"));
        CHECK_EQ(m.cal.pulse_max_us, value(v, "pulse_max_us"));
        CHECK_EQ(m.cal.travel_cdeg, value(v, "travel_cdeg"));
    } else if (!strcmp(v->message, "ConfigFeedback")) {
        msg_config_feedback_t m;
        CHECK(msg_decode_config_feedback(f, &m));
        CHECK_EQ(m.channel, value(v, "channel"));
        CHECK_EQ(m.on, value(v, "on"));
        if (m.on) {
            CHECK_EQ(m.cal.adc_lo, value(v, "adc_lo"));
            CHECK_EQ(m.cal.angle_lo_cdeg, value(v, "angle_lo_cdeg"));
            CHECK_EQ(m.cal.adc_hi, value(v, "adc_hi"));
            CHECK_EQ(m.cal.angle_hi_cdeg, value(v, "angle_hi_cdeg"));
        }
    } else if (!strcmp(v->message, "ConfigSystem")) {
        msg_config_system_t m;
        CHECK(msg_decode_config_system(f, &m));
        CHECK_EQ(m.watchdog_ms, value(v, "watchdog_ms"));
        CHECK_EQ(m.watchdog_action, value(v, "watchdog_action"));
        CHECK_EQ(m.telemetry_period_ms, value(v, "telemetry_period_ms"));
        CHECK_EQ(m.servo_speed_cdeg_s, value(v, "servo_speed_cdeg_s"));
    } else if (!strcmp(v->message, "Enable")) {
        bool on;
        CHECK(msg_decode_enable(f, &on));
        CHECK_EQ(on, value(v, "enable"));
    } else if (!strcmp(v->message, "Estop")) {
        CHECK_EQ(f->len, 0);
    } else {
        fprintf(stderr, "unknown host message %s\n", v->message);
        check_failures++;
    }
}

/* MCU -> host: the firmware encodes these; its payload must equal the vector's. */
static void check_encoded(const vector_t *v, const proto_frame_t *f)
{
    uint8_t payload[PROTO_MAX_PAYLOAD];
    uint8_t len = 0;
    if (!strcmp(v->message, "Pong")) {
        msg_pong_t m = {.host_time_us = (uint64_t)value(v, "host_time_us"),
                        .mcu_time_us = (uint32_t)value(v, "mcu_time_us"),
                        .boot_id = (uint32_t)value(v, "boot_id")};
        len = msg_encode_pong(&m, payload);
    } else if (!strcmp(v->message, "ErrorReport")) {
        msg_error_t m = {.code = (uint8_t)value(v, "code"),
                         .type = (uint8_t)value(v, "msg_type"),
                         .seq = (uint16_t)value(v, "seq")};
        len = msg_encode_error(&m, payload);
    } else if (!strcmp(v->message, "Telemetry")) {
        msg_telemetry_t m = {.mcu_time_us = (uint32_t)value(v, "mcu_time_us"),
                             .flags = (uint16_t)value(v, "flags"),
                             .limit_mask = (uint16_t)value(v, "limit_mask"),
                             .feedback_mask = (uint16_t)value(v, "feedback_mask")};
        const field_t *counters = field(v, "counters"), *angles = field(v, "angles_cdeg"),
                      *pulses = field(v, "pulses_us");
        CHECK_EQ(counters->n, CNT_COUNT);
        for (int i = 0; i < CNT_COUNT; i++) {
            m.counters[i] = (uint16_t)counters->v[i];
        }
        m.count = (uint8_t)angles->n;
        for (int i = 0; i < angles->n && i < (int)SERVO_CHANNELS; i++) {
            m.angle_cdeg[i] = (int16_t)angles->v[i];
            m.pulse_us[i] = (uint16_t)pulses->v[i];
        }
        len = msg_encode_telemetry(&m, payload);
    } else {
        fprintf(stderr, "unknown MCU message %s\n", v->message);
        check_failures++;
        return;
    }
    CHECK_EQ(len, f->len);
    CHECK(memcmp(payload, f->payload, len < f->len ? len : f->len) == 0);
}

static void check_vector(const char *path)
{
    vector_t v;
    if (parse_file(path, &v) != 0) {
        fprintf(stderr, "cannot read %s\n", path);
        check_failures++;
        return;
    }
    int before = check_failures;
    const uint8_t *key = v.has_key ? v.key : NULL;
    proto_dir_t dir = (proto_dir_t)value(&v, "frame_direction");
    uint32_t boot_id = v.has_key ? (uint32_t)value(&v, "frame_boot_id") : 0;

    /* decode: exactly one frame, header fields as listed */
    capture_t c = {0};
    proto_parser_t parser;
    protocol_parser_init(&parser, key, dir, boot_id, capture, &c);
    protocol_feed(&parser, v.frame, v.frame_len);
    CHECK_EQ(c.frames, 1);
    CHECK_EQ(c.frame.type, value(&v, "frame_type"));
    CHECK_EQ(c.frame.seq, value(&v, "frame_seq"));
    CHECK_EQ(c.frame.authenticated, v.has_key);
    if (v.has_key) {
        CHECK_EQ(c.frame.counter, value(&v, "frame_counter"));
    }

    /* encode: the same payload framed again gives the same bytes */
    proto_sender_t s = {.key = key,
                        .dir = dir,
                        .seq = (uint16_t)value(&v, "frame_seq"),
                        .counter = v.has_key ? (uint32_t)value(&v, "frame_counter") : 0,
                        .boot_id = boot_id};
    uint8_t out[PROTO_MAX_FRAME];
    size_t n = protocol_encode(&s, c.frame.type, c.payload, c.frame.len, out);
    CHECK_EQ(n, v.frame_len);
    CHECK(memcmp(out, v.frame, v.frame_len) == 0);

    if (dir == PROTO_DIR_TO_MCU) {
        check_decoded(&v, &c.frame);
    } else {
        check_encoded(&v, &c.frame);
    }
    if (check_failures != before) {
        fprintf(stderr, "  in vector %s\n", path);
    }
}

int run_vector_tests(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        return 0;
    }
    int count = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".txt")) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            check_vector(path);
            count++;
        }
    }
    closedir(d);
    return count;
}
