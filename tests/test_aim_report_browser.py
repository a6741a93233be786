"""The report in a real browser (issue 24, item 4): headless Chromium opens the written page and
a small script, added to a copy in the test only, counts the images that loaded
(``complete && naturalWidth > 0``) into the DOM, which ``--dump-dom`` prints. No screenshot is
compared. A copy with one image's data corrupted must be reported broken, so the check can fail.
Skipped, with the reason, where no Chromium or Chrome is installed."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")

from aim import AIM  # noqa: E402
from aim.report import write_report  # noqa: E402
from marginals import Dataset, Domain  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::aim.release.NotPrivateWarning")

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
PNG_URI = "data:image/png;base64,"
CHECK = """<script>
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.images);
  var broken = images.filter(function (im) { return !(im.complete && im.naturalWidth > 0); }).length;
  var out = document.createElement("pre");
  out.id = "image-check";
  out.textContent = "IMAGES " + images.length + " BROKEN " + broken;
  document.body.appendChild(out);
});
</script>"""


@pytest.fixture(scope="module")
def browser() -> str:
    """The first Chromium or Chrome on the PATH (else the module's tests are skipped)."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(f"no headless browser to render the report: none of {', '.join(BROWSERS)} is on the PATH")


def _loaded_images(browser: str, page: Path, profile: Path) -> tuple[int, int]:
    """(images on the page, images that did not load) as the browser saw them."""
    argv = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
            "--virtual-time-budget=5000", "--dump-dom", page.resolve().as_uri()]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    found = re.search(r"IMAGES (\d+) BROKEN (\d+)", done.stdout)
    assert found, f"the check did not run (exit {done.returncode}): {done.stderr[-800:]}"
    return int(found.group(1)), int(found.group(2))


def _with_check(source: str, path: Path) -> Path:
    """A copy of the page with the image check before ``</body>``."""
    assert source.count("</body>") == 1
    path.write_text(source.replace("</body>", CHECK + "</body>"), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    """The report, with its non-private diagnostic (more figures), of a small release."""
    rng = np.random.default_rng(4)
    a = rng.integers(0, 3, 400)
    table = pd.DataFrame({"a": a, "b": (a + rng.integers(0, 2, 400)) % 3, "c": rng.integers(0, 2, 400)})
    data = Dataset(table, Domain(("a", "b", "c"), (3, 3, 2)))
    release = AIM(2.0, 1e-9, rounds=4, insecure_seed=5, max_iters=20, final_iters=20).run(data)
    return write_report(release, tmp_path_factory.mktemp("browser") / "report.html", data, worst=1)


def test_every_image_loads_in_chromium(browser, page, tmp_path):
    source = page.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=["']?(https?:|//|file:)""", source)  # self-contained: nothing fetched
    expected = source.count("<img ")
    assert expected == source.count(PNG_URI) == 2 + 1 + 3 + 1
    shown, broken = _loaded_images(browser, _with_check(source, tmp_path / "checked.html"), tmp_path / "profile")
    assert (shown, broken) == (expected, 0)


def test_the_check_sees_a_broken_image(browser, page, tmp_path):
    source = page.read_text(encoding="utf-8")
    start = source.index(PNG_URI) + len(PNG_URI)
    end = source.index('"', start)
    corrupt = source[:start] + base64.b64encode(b"not a png at all").decode("ascii") + source[end:]
    shown, broken = _loaded_images(browser, _with_check(corrupt, tmp_path / "corrupt.html"), tmp_path / "profile")
    assert shown == source.count("<img ") and broken == 1
