/*
 * libFuzzer harness for the frame parser and the payload decoders (make fuzz).
 * The first input byte picks plain or authenticated mode and a chunk size, so both the MAC
 * path and frames split across protocol_feed() calls are exercised.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../core/messages.h"
#include "../../core/protocol.h"

static const uint8_t key[SIPHASH_KEY_LEN] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

static void on_frame(void *ctx, const proto_frame_t *f)
{
    uint32_t *accepted = ctx;
    (*accepted)++;
    if (f->len > PROTO_MAX_PAYLOAD) {
        abort(); /* the parser must never hand over an oversized payload */
    }
    msg_ping_t ping;
    msg_set_targets_t targets;
    msg_config_channel_t channel;
    msg_config_system_t system;
    bool enable;
    (void)msg_decode_ping(f, &ping);
    if (msg_decode_set_targets(f, &targets) && targets.first + targets.count > SERVO_CHANNELS) {
        abort();
    }
    (void)msg_decode_config_channel(f, &channel);
    (void)msg_decode_config_system(f, &system);
    (void)msg_decode_enable(f, &enable);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    uint32_t accepted = 0;
    proto_parser_t p;
    protocol_parser_init(&p, (data[0] & 0x80) ? key : NULL, PROTO_DIR_TO_MCU, 7, on_frame,
                         &accepted);
    size_t chunk = (size_t)(data[0] & 0x7f) + 1;
    for (size_t i = 1; i < size; i += chunk) {
        protocol_feed(&p, data + i, size - i < chunk ? size - i : chunk);
    }
    protocol_timeout(&p); /* the line goes quiet: every incomplete candidate is abandoned */
    if (p.held != 0) {
        abort();
    }
    if (p.counters.frames_ok != (uint16_t)accepted) {
        abort();
    }
    return 0;
}
