"""Paper check: the io.net AIBC 2025 headline claims beside the values recomputed from the data."""

from __future__ import annotations

import streamlit as st

from fleetplan.app import data
from fleetplan.planner.paper_check import PAPER_POWER_W, PAPER_PRICES, Verdict
from fleetplan.services.paper_check import paper_claims

st.title("Paper check")
st.caption(
    "io.net, “Idle Consumer GPUs as a Complement to Enterprise Hardware for LLM Inference” "
    "(AIBC 2025). Recomputed from the benchmark points in the warehouse (the bundled data are the "
    "paper's own published results) at the paper's prices "
    f"(${PAPER_PRICES['h100-pcie']:.2f}/h per H100 PCIe, ${PAPER_PRICES['rtx-4090']:.2f}/h per "
    f"RTX 4090) and power assumptions ({PAPER_POWER_W['h100-pcie']:.0f} W, "
    f"{PAPER_POWER_W['rtx-4090']:.0f} W), and with rated powers from the catalog."
)
claims = paper_claims(data.points(), data.catalog())
if not claims:
    st.info(
        "The warehouse has no points of models measured on both H100 PCIe and RTX 4090 "
        "servers: build it from the bundled data (`make run`) to check the paper."
    )
    st.stop()

icons = {
    Verdict.HOLDS: ":material/check_circle:",
    Verdict.CONDITIONS: ":material/rule:",
    Verdict.FAILS: ":material/cancel:",
    Verdict.UNKNOWN: ":material/help:",
}
summary = [
    {"claim": c.claim, "verdict": c.verdict.value, "paper": c.paper, "recomputed": c.recomputed}
    for c in claims
]
st.dataframe(summary, hide_index=True, key="table_claims")
for claim in claims:
    with st.expander(f"{claim.claim} — {claim.verdict.value}", icon=icons[claim.verdict]):
        st.markdown(f"**Paper:** {claim.paper}  \n**Recomputed:** {claim.recomputed}")
        st.caption(claim.how)
        st.dataframe(claim.rows, hide_index=True, key=f"table_claim_{claim.key}")
