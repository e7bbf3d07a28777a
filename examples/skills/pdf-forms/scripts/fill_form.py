#!/usr/bin/env python3
"""List, fill or flatten the AcroForm fields of a PDF.

  fill_form.py --list FORM.pdf
  fill_form.py FORM.pdf VALUES.json OUT.pdf
  fill_form.py --flatten FILLED.pdf OUT.pdf
"""
import json
import sys

from pypdf import PdfReader, PdfWriter


def on_state(field):
    states = [s for s in field.get("/_States_", []) if s != "/Off"]
    return states[0] if len(states) == 1 else None


def list_fields(path):
    for name, field in sorted((PdfReader(path).get_fields() or {}).items()):
        print(f"{name}\t{field.get('/FT')}\t{field.get('/V')}\t{' '.join(field.get('/_States_', []))}")


def fill(form, values_path, out):
    reader = PdfReader(form)
    fields = reader.get_fields() or {}
    with open(values_path) as f:
        values = json.load(f)
    unknown = sorted(set(values) - set(fields))
    if unknown:
        sys.exit(f"unknown fields: {', '.join(unknown)}")
    for name, value in list(values.items()):
        if value is True:
            state = on_state(fields[name])
            if state is None:
                sys.exit(f"{name}: cannot tell the checkbox's on-state")
            values[name] = state
        elif value is False:
            values[name] = "/Off"
    writer = PdfWriter(clone_from=reader)
    for page in writer.pages:
        writer.update_page_form_field_values(page, values, auto_regenerate=True)
    writer.set_need_appearances_writer(True)
    writer.write(out)


def flatten(filled, out):
    writer = PdfWriter(clone_from=filled)
    for page in writer.pages:
        writer.update_page_form_field_values(page, {}, flatten=True)
    writer.remove_annotations(subtypes=["/Widget"])
    writer.write(out)


def main(argv):
    if len(argv) == 2 and argv[0] == "--list":
        list_fields(argv[1])
    elif len(argv) == 3 and argv[0] == "--flatten":
        flatten(argv[1], argv[2])
    elif len(argv) == 3:
        fill(*argv)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
