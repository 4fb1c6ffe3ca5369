"""What a paper needs to use and cite the package: the MIT license declared where packaging
tools read it, a CITATION.cff that GitHub and Zenodo read (CFF 1.2.0: its required keys and
the formats of the fields used; the wheel test validates it against the CFF schema too), and
the README's bibtex, all naming one version and one repository address."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import pytest
import yaml
from test_env_fingerprint import project_version

ROOT = Path(__file__).resolve().parents[1]


def pyproject() -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def citation() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))


def bibtex() -> dict[str, str]:
    """The fields of the README's bibtex entry."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bibtex\n(@\w+\{[^\n]*\n.*?\n\})\n```", text, re.S)
    assert block, "README.md has no ```bibtex block"
    fields = dict(re.findall(r"^\s+(\w+)\s*=\s*\{(.*)\},?$", block.group(1), re.M))
    assert block.group(1).startswith("@software{zhuoji_env,")
    return fields


def test_the_license_is_mit_and_declared_in_pyproject():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n\nCopyright (c) 2026 zhuoji-env maintainers\n")
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text
    project = pyproject()["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]  # SPDX only
    requires = pyproject()["build-system"]["requires"]
    assert requires == ["setuptools>=77"]  # the first to read an SPDX license expression


def test_citation_cff_has_the_required_keys_of_cff_1_2_0():
    cff = citation()
    assert cff["cff-version"] == "1.2.0"
    for key in ("message", "title", "authors"):
        assert isinstance(cff[key], str if key != "authors" else list) and cff[key], key
    for author in cff["authors"]:  # a person (family-names) or an entity (name)
        assert isinstance(author, dict) and (author.get("family-names") or author.get("name"))
    assert cff["type"] in ("software", "dataset")
    assert cff["license"] == "MIT"
    assert isinstance(cff["version"], str)
    datetime.date.fromisoformat(cff["date-released"])  # a quoted YYYY-MM-DD, as CFF wants
    assert re.fullmatch(r"https://\S+", cff["repository-code"])
    assert all(isinstance(k, str) for k in cff["keywords"])


def test_one_version_and_one_address_everywhere():
    version = project_version()
    url = pyproject()["project"]["urls"]["Repository"]
    cff, bib = citation(), bibtex()
    assert cff["version"] == bib["version"] == version
    assert cff["repository-code"] == bib["url"] == url, (
        "the repository address differs between pyproject.toml ([project.urls] Repository), "
        "CITATION.cff (repository-code) and README.md's bibtex (url): give all three the same"
    )
    assert bib["year"] == cff["date-released"][:4]
    assert bib["license"] == cff["license"] == pyproject()["project"]["license"]
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## [{version}] - {cff['date-released']}" in changelog
    links = re.findall(r"^\[[^\]]+\]: (\S+)$", changelog, re.M)
    assert links and all(link.startswith(url + "/") for link in links), links
    assert pyproject()["project"]["urls"]["Changelog"].startswith(url + "/")


@pytest.mark.parametrize("field", ["title", "author", "year", "version", "url", "note"])
def test_the_bibtex_is_complete(field):
    value = bibtex()[field]
    assert value and not re.search(r"<[A-Z]+>|TODO|XXX", value), f"{field} = {{{value}}}"
