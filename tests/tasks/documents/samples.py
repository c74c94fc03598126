"""Sample documents of every format, written as bytes: PDFs are built by hand (a minimal,
valid PDF 1.4 with one Helvetica text line per paragraph), so no PDF library writes them."""

from __future__ import annotations

MARKDOWN = """# Garden guide

Tomatoes need six hours of sun and deep watering twice a week.

## Pests

Aphids gather under the leaves; spray them off with water in the morning.
"""

TEXT = """Boiler manual

Bleed the radiators each autumn. The pressure gauge should read 1.5 bar when cold.
"""

HTML = """<!doctype html><html><head><title>Bicycle care</title>
<style>body { color: red }</style><script>var secret = "not text";</script></head>
<body><h1>Bicycle care</h1><p>Oil the chain every 300 kilometres.</p>
<h2>Tyres</h2><p>Pump the tyres to <b>4 bar</b> before a long ride.</p></body></html>
"""

PDF_LINES = ("Passport renewal", "Renew the passport six months before it expires.")


def pdf(lines: tuple[str, ...] = PDF_LINES, title: str | None = None) -> bytes:
    """A one-page PDF showing each line, with correct cross-reference offsets."""
    ops = ["BT", "/F1 12 Tf", "72 720 Td", "14 TL"]
    for line in lines:
        escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        ops += [f"({escaped}) Tj", "T*", "T*"]
    ops.append("ET")
    stream = "\n".join(ops).encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    if title is not None:
        objects.append(b"<< /Title (" + title.encode("latin-1") + b") >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    info = b" /Info %d 0 R" % len(objects) if title is not None else b""
    out += b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        info,
        xref,
    )
    return bytes(out)
