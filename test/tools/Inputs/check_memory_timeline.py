"""Checks the bands of a --memory-timeline SVG: each polygon traces its top
edge over every step (two points per step) and comes back along the band
below (two more), the highest point of all bands is the frame's top when
no budget is drawn, and the panel's data attributes are integers.

usage: check_memory_timeline.py FILE.svg
"""
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"

root = ET.parse(sys.argv[1]).getroot()
panel = next(root.iter(SVG + "g"))
steps = int(panel.get("data-steps"))
int(panel.get("data-peak-bytes"))
frame = next(panel.iter(SVG + "rect"))
top = float(frame.get("y"))
phases, highest, counts = [], None, set()
for polygon in panel.iter(SVG + "polygon"):
    phases.append(polygon.get("data-phase"))
    points = [tuple(map(float, p.split(","))) for p in polygon.get("points").split()]
    counts.add(len(points) // steps)
    ys = min(y for _, y in points)
    highest = ys if highest is None else min(highest, ys)
if highest < top - 1e-6:
    sys.exit(f"a band rises above the frame: {highest} < {top}")
print(f"bands {' '.join(phases)}, top {highest:.2f}, "
      f"{'/'.join(map(str, sorted(counts)))} points per step")
