#!/usr/bin/env bash
# Rebuild docs/protocol.md from the per-area notes in docs/protocol-notes/ (each note is owned
# by the code it documents; this file is the one place a reader starts from).
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/protocol.md
# Bottom-up order: the wire formats first, then the two roles, then the test oracles.
order="l2 cm rec stack-core device-l2 controller fuzz-scapy"
notes=()
for n in $order; do [ -f "docs/protocol-notes/$n.md" ] && notes+=("docs/protocol-notes/$n.md"); done
for f in docs/protocol-notes/*.md; do
  case " $order " in *" $(basename "$f" .md) "*) ;; *) notes+=("$f") ;; esac
done
{
  cat <<'HDR'
# PROFINET wire facts and their sources

Every wire fact the code relies on, with the public source it comes from. The sections are kept
next to the code they describe in `docs/protocol-notes/` and collected here by
`ci/protocol-doc.sh`; edit the notes, then rerun the script.

Main sources:
* Wireshark `plugins/epan/profinet/` (`packet-pn-rt.c`, `packet-pn-dcp.c`,
  `packet-dcerpc-pn-io.c`, `packet-pn.c`), `epan/dissectors/packet-lldp.c`,
  `epan/dissectors/packet-dcerpc.c`, and the field tables of the installed tshark
  (`tshark -G fields`);
* rtlabs-com/p-net (`src/common/`, `src/device/pf_*.c`);
* The Open Group C706 (DCE/RPC), RFC 791/768 (IPv4/UDP), IEEE 802.1AB (LLDP), RFC 4836 (MAU);
* the real frames in `shared/fixtures/real-frames/` (provenance in their INDEX.md; the
  permissively licensed ones are kept in `protocol/tests/fixtures/real-frames/`).

Contents:
HDR
  for f in "${notes[@]}"; do
    title=$(head -n 1 "$f" | sed 's/^# //')
    echo "* [$title](#$(basename "$f" .md))"
  done
  for f in "${notes[@]}"; do
    echo
    echo "<a id=\"$(basename "$f" .md)\"></a>"
    echo
    # Demote the note's headings by one level so the document has one title.
    sed 's/^#/##/' "$f"
  done
} > "$out"
echo "wrote $out ($(wc -l < "$out") lines)"
