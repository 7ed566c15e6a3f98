"""The deployment files are checked like code: cfn-lint on the template, units present and sane."""
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
AWS = ROOT / "ops" / "aws"


def test_template_passes_cfn_lint():
    cfn_lint = shutil.which("cfn-lint", path=str(pathlib.Path(sys.executable).parent))
    assert cfn_lint, "cfn-lint is part of the test dependencies"
    result = subprocess.run([cfn_lint, str(AWS / "blackwidow.yaml")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_unit_bootstrap_enables_exists():
    script = (AWS / "bootstrap.sh").read_text()
    units = set(re.findall(r"blackwidow-[a-z-]+(?:\.timer)?", " ".join(re.findall(r'units="([^"]+)"', script))))
    assert units == {"blackwidow-api", "blackwidow-scheduler", "blackwidow-spawn", "blackwidow-load-metric.timer"}
    for unit in units:
        name = unit if unit.endswith(".timer") else unit + ".service"
        assert (AWS / "systemd" / name).is_file(), name


def test_no_secret_is_inline_in_the_template():
    text = (AWS / "blackwidow.yaml").read_text()
    assert "GenerateSecretString" in text and "ManageMasterUserPassword: true" in text
    assert not re.search(r"(?i)(password|secret|token)\s*:\s*['\"]?[A-Za-z0-9]{12,}", text)
