#!/usr/bin/env bash
# Render the XLSX workbooks of the bundled sample (and, when the corpus is there, of a real
# comparison) to PNG pages, to look at them as a person would: charts, legends, number formats.
#   examples/render_workbooks.sh OUTDIR
# Needs asys, LibreOffice (soffice; Debian: libreoffice-calc-nogui) and pdftoppm (poppler-utils).
set -euo pipefail
out=${1:?usage: examples/render_workbooks.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
kineto=$here/../../shared/corpus/kineto
mkdir -p "$out"
asys stats -r hggc_ppu_kern_sum,ppu_op_type_sum,ppu_op_sum --format xlsx -o "$out/sample.xlsx" -f true \
  "$here/sample.asysrep"
if [ -f "$kineto/tracelens_h100_bert.json.gz" ] && [ -f "$kineto/tracelens_mi300_bert.json.gz" ]; then
  asys stats -r ppu_kernel_summary_compare,ppu_operator_summary_compare --format xlsx -o "$out/compare.xlsx" -f true \
    "$kineto/tracelens_h100_bert.json.gz" "$kineto/tracelens_mi300_bert.json.gz"
fi
for book in "$out"/*.xlsx; do
  soffice --headless --convert-to pdf --outdir "$out" "$book" >/dev/null
  pdftoppm -png -r 50 "${book%.xlsx}.pdf" "${book%.xlsx}"
done
ls "$out"/*.png
