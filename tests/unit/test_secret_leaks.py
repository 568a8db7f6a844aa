"""The secrets checks themselves can fail: a secret on a command line, in an environment, in a readable file."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.secret_leaks import ProcessSampler, assert_absent, leaks_in_files

SECRET = "leak-canary-5f2a9c"


def test_a_secret_on_a_command_line_or_in_an_environment_is_caught() -> None:
    sleeper = [sys.executable, "-c", "import time; time.sleep(3)"]
    with ProcessSampler([SECRET, "never-there-0"], interval_s=0.05) as sampler:
        on_argv = subprocess.Popen([*sleeper, SECRET])
        in_env = subprocess.Popen(sleeper, env={**os.environ, "SOME_TOKEN": SECRET})
        time.sleep(1)
        on_argv.kill()
        in_env.kill()
    leaks = " | ".join(sampler.leaks)
    assert f"pid {on_argv.pid}'s command line" in leaks and f"pid {in_env.pid}'s environment" in leaks
    assert SECRET not in leaks, "the report must not print the secret"
    assert not any("secret #1" in leak for leak in sampler.leaks), sampler.leaks


def test_a_secret_in_a_file_others_can_read_or_outside_its_place_is_caught(tmp_path: Path) -> None:
    private = tmp_path / "private.json"
    private.write_text(SECRET)
    private.chmod(0o600)
    readable = tmp_path / "logs" / "task.log"
    readable.parent.mkdir()
    readable.write_text(f"password={SECRET}")
    readable.chmod(0o644)
    stray = tmp_path / "stray.txt"
    stray.write_text(SECRET)
    stray.chmod(0o600)
    problems = leaks_in_files(SECRET, [tmp_path], allowed=[private])
    assert any(str(readable) in p and "others can read" in p for p in problems), problems
    assert any(str(stray) in p and "not a place meant for it" in p for p in problems), problems
    assert not any(str(private) in p for p in problems)


def test_assert_absent_names_where_the_secret_was_found() -> None:
    assert_absent(SECRET, log="nothing here")
    with pytest.raises(AssertionError, match="xcom"):
        assert_absent(SECRET, log="clean", xcom=f'{{"password": "{SECRET}"}}')


def test_a_watched_folder_records_private_copies_and_catches_open_ones(tmp_path: Path) -> None:
    """The secured pipeline's spec copies: private (0600 in a 0700 folder) is recorded, anything looser leaks."""
    watched = tmp_path / "tmp"
    private_dir, open_dir = watched / "eos-submit-a", watched / "eos-submit-b"
    for folder, mode in ((private_dir, 0o700), (open_dir, 0o755)):
        folder.mkdir(parents=True)
        folder.chmod(mode)
        copy = folder / "spec.yaml"
        copy.write_text(f"sasl.password: {SECRET}")
        copy.chmod(0o600)
    (watched / "unrelated.txt").write_text("nothing secret")
    sampler = ProcessSampler([SECRET], watched=[watched])
    sampler._sample_files(watched)
    assert sampler.private_copies_seen == {private_dir / "spec.yaml"}
    assert len(sampler.leaks) == 1 and "eos-submit-b (755)" in sampler.leaks[0] and SECRET not in sampler.leaks[0]
