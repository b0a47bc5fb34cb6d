"""starter/template.yaml is template.yaml with no binary named: one template, not two that drift.

SAM's cargo-lambda build needs `BuildProperties: Binary` only when the crate at `CodeUri` has
more than one binary ("Binary – Optional. Specify when a single Cargo package defines more than
one binary", https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/building-rust.html).
The repository's package has its examples and a workspace beside it, so the top-level template
names `basket`; the starter is a crate with one binary, so its template names none, and the one
name a user changes is the package's in starter/Cargo.toml.

  python3 scripts/starter-template.py           writes starter/template.yaml
  python3 scripts/starter-template.py --check   fails if starter/template.yaml differs
"""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
NAMED = "      BuildProperties:\n        Binary: basket\n"
HEADER = (
    "# Generated from mcp-lambda's template.yaml by scripts/starter-template.py: the same template,\n"
    "# with no binary named (SAM builds the one binary of the crate at CodeUri). Change the\n"
    "# original and regenerate; the test command fails if the two differ.\n"
)


def generated() -> str:
    source = (ROOT / "template.yaml").read_text()
    if source.count(NAMED) != 1:
        sys.exit("template.yaml: expected the function's `BuildProperties: Binary: basket` once")
    return HEADER + source.replace(NAMED, "")


def main() -> None:
    target = ROOT / "starter" / "template.yaml"
    if sys.argv[1:] == ["--check"]:
        if not target.exists() or target.read_text() != generated():
            sys.exit("starter/template.yaml differs from template.yaml: run python3 scripts/starter-template.py")
        print("starter/template.yaml is template.yaml with no binary named")
    else:
        target.write_text(generated())


main()
