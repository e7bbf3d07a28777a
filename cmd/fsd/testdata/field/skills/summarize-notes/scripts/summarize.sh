# No #! line and no executable bit, as skills arrive from a zip.
echo "outline of: $1"
echo "- decision: ship on Friday"
