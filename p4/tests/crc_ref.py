"""Independent bitwise CRC implementations for cross-checks (no table, no zlib)."""


def reflect(x, width):
    r = 0
    for _ in range(width):
        r = (r << 1) | (x & 1)
        x >>= 1
    return r


def crc32_reflected(data, poly, init=0xFFFFFFFF, xorout=0xFFFFFFFF):
    """CRC-32 with reflected input/output for an arbitrary (normal-form) polynomial."""
    rpoly = reflect(poly, 32)
    crc = init
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (rpoly if crc & 1 else 0)
    return crc ^ xorout
