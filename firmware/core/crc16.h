/* CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no final xor). */
#ifndef CRC16_H
#define CRC16_H

#include <stddef.h>
#include <stdint.h>

#define CRC16_INIT 0xFFFFu

uint16_t crc16_update(uint16_t crc, const uint8_t *data, size_t len);

/* crc[i + 1] = crc16_update(crc[i], data + i, 1) for i < len: the register after each byte. */
void crc16_running(uint16_t *crc, const uint8_t *data, size_t len);

/* Fill the tables crc16_zeros uses (protocol_parser_init calls it). */
void crc16_init(void);

/* The register after n more zero bytes, crc16_update(crc, zeros, n), in at most eight
 * rounds of four lookups. The CRC is linear: with Z(i) the CRC from 0 (not CRC16_INIT) of
 * a stream's bytes before position i, the CRC of its bytes [s, e) is
 * Z(e) ^ crc16_zeros(Z(s) ^ CRC16_INIT, e - s); the parser checks any candidate frame in
 * constant time so. */
uint16_t crc16_zeros(uint16_t crc, uint8_t n);

#endif
