"""Runs last of the YARN tests (file order): stopping the application gives back every
container, and no executor or Python process of it is left."""

from __future__ import annotations

import psutil

from waiting import eventually


def test_stopping_the_application_releases_every_container(yarn, yarn_spark):
    app_id = yarn_spark.sparkContext.applicationId
    assert yarn.containers() > 0
    yarn_spark.stop()
    eventually(lambda: yarn.containers() == 0, timeout=60, every=1,
               what=lambda: f"{yarn.containers()} containers left")
    left = [p for p in psutil.process_iter(["cmdline"])
            if any(app_id in part for part in p.info["cmdline"] or [])]
    assert left == []
