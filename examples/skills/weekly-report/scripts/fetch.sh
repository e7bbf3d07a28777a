#!/bin/sh
# Prints one ISO week's sales rows as CSV. The example ships a fixed ledger
# so the workflow runs offline; point SALES_LEDGER at a real CSV export to
# use your own (columns: week,region,product,units,revenue).
set -eu
week="${1:?usage: fetch.sh YYYY-Www}"
ledger="${SALES_LEDGER:-$(dirname "$0")/ledger.csv}"
echo "region,product,units,revenue"
grep "^$week," "$ledger" | cut -d, -f2- || echo "# no rows for $week"
