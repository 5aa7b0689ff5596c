"""Paper check: the io.net AIBC 2025 headline claims beside the values recomputed from the paper's
own published runs (the same claims `fleetplan paper-check` prints)."""

from __future__ import annotations

import streamlit as st

from fleetplan.app import data
from fleetplan.planner.paper.basis import PAPER_POWER_W, PAPER_PRICES, Verdict
from fleetplan.services.paper_check import NO_PAPER_RUNS, paper_claims

st.title("Paper check")
st.caption(
    "io.net, “Idle Consumer GPUs as a Complement to Enterprise Hardware for LLM Inference” "
    "(AIBC 2025). Recomputed from the paper's own published runs (the bundled sample data; runs "
    "you uploaded are left out, so they cannot change its verdicts), each claim on the comparison "
    "the paper makes, at the paper's prices "
    f"(${PAPER_PRICES['h100-pcie']:.2f}/h per H100 PCIe, ${PAPER_PRICES['rtx-4090']:.2f}/h per "
    f"RTX 4090) and power assumptions ({PAPER_POWER_W['h100-pcie']:.0f} W, "
    f"{PAPER_POWER_W['rtx-4090']:.0f} W), and with rated powers from the catalog. The same claims "
    "come as text or JSON from `fleetplan paper-check`."
)
claims = paper_claims(data.points(), data.catalog(), data.run_origins())
if not claims:
    st.info(NO_PAPER_RUNS)
    st.stop()

icons = {
    Verdict.HOLDS: ":material/check_circle:",
    Verdict.CONDITIONS: ":material/rule:",
    Verdict.FAILS: ":material/cancel:",
    Verdict.NOT_REPRODUCIBLE: ":material/block:",
    Verdict.UNKNOWN: ":material/help:",
}
summary = [
    {
        "id": c.key,
        "claim": c.claim,
        "verdict": c.verdict.value,
        "paper": c.paper,
        "recomputed": c.recomputed,
    }
    for c in claims
]
st.dataframe(summary, hide_index=True, key="table_claims")
for claim in claims:
    with st.expander(f"{claim.claim} — {claim.verdict.value}", icon=icons[claim.verdict]):
        # "$" pairs would be read as LaTeX: the prices stay text.
        paper, recomputed = (text.replace("$", "\\$") for text in (claim.paper, claim.recomputed))
        st.markdown(f"**Paper:** {paper}  \n**Recomputed:** {recomputed}")
        st.caption(claim.how)
        st.dataframe(claim.rows, hide_index=True, key=f"table_claim_{claim.key}")
