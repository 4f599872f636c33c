//! `docs/shoot-fields.md`, generated from the table.

use super::{FIELDS, Fate};

/// `docs/shoot-fields.md`: the table as a page.
pub fn markdown() -> String {
    let mut out = String::from(
        "# The Shoot contract: every field and its fate\n\n\
         Generated from `crates/admission/src/shoot/contract/` (`FIELDS`); a test fails when this \
         page, the table or the Shoot CRD disagree. A field is **honoured** (it changes the running \
         cluster; the test named proves it), **refused** (admission rejects any value, with the \
         reason), or accepted **only as** the values that state what the system does anyway. An \
         entry covers the field and everything below it. On an update, only values that changed \
         are checked. Rules that depend on values (versions, other fields) are listed in \
         `docs/admission.md`.\n\n\
         | Field | Fate | What it does, or why it is refused | Proof |\n|---|---|---|---|\n",
    );
    for f in FIELDS {
        let row = match f.fate {
            Fate::Honoured { how, proof } => format!("| `{}` | honoured | {how} | `{proof}` |\n", f.path),
            Fate::Refused { why } => {
                format!("| `{}` | refused | {why} | `the_contract_refuses_what_it_does_not_honour` |\n", f.path)
            }
            Fate::OnlyAs { values, how, proof, why } => format!(
                "| `{}` | only as {} | {how}; otherwise refused: {why} | `{proof}` |\n",
                f.path,
                values.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ")
            ),
        };
        out.push_str(&row);
    }
    out
}
