"""Lists the images of every CUDA fatbin embedded in a file.

usage: fatbin_images.py FILE

Prints one line per fatbin: its images in order, each its kind (elf: SASS,
ptx: PTX for the driver's JIT) and architecture, e.g.
``fatbin: elf sm_90a, ptx sm_90``. NVIDIA does not document the fatbin
layout and CUDA 13's toolkit has no cuobjdump here; the fields read are
those that CUDA 13's fatbinary writes (checked against its --image3 options
by hand):

* the header: magic 0xBA55ED50, u16 version, u16 header size, u64 size of
  the images that follow;
* each image's header: u16 kind (1 PTX, 2 ELF) at 0, u32 header size at 4,
  u64 payload size at 8, u32 SM number at 28 (90), u64 flags at 40, whose
  bit 0x100000 marks an arch-specific target (sm_90a).
"""
import struct
import sys

MAGIC = b"\x50\xed\x55\xba"
KINDS = {1: "ptx", 2: "elf"}
ARCH_SPECIFIC = 0x100000


def images(data, start):
    """The images of the fatbin at `start`, and where it ends."""
    _, _, header, size = struct.unpack_from("<IHHQ", data, start)
    at, end, found = start + header, start + header + size, []
    while at < end:
        kind, _, image_header, payload = struct.unpack_from("<HHIQ", data, at)
        (sm,) = struct.unpack_from("<I", data, at + 28)
        (flags,) = struct.unpack_from("<Q", data, at + 40)
        suffix = "a" if flags & ARCH_SPECIFIC else ""
        found.append(f"{KINDS.get(kind, f'kind{kind}')} sm_{sm}{suffix}")
        at += image_header + payload
    return found, end


def main():
    data = open(sys.argv[1], "rb").read()
    at = data.find(MAGIC)
    count = 0
    while at >= 0:
        found, end = images(data, at)
        print("fatbin: " + ", ".join(found))
        count += 1
        at = data.find(MAGIC, end)
    if count == 0:
        print("no fatbin")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
