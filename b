{
  "format": 1,
  "verdict": "passed",
  "exit_code": 0,
  "reference": "/work/wt-walk45/tables/TRACKED.yaml",
  "expect_version": null,
  "dists": [
    {
      "file": "neurobrix-0.1.0-py3-none-any.whl",
      "path": "/tmp/x/neurobrix-0.1.0-py3-none-any.whl",
      "kind": "wheel",
      "name": "neurobrix",
      "version": "0.1.0",
      "sha256": "02885a63958523858b2c6073d594c955fca80ac6f98296047e9ebf61be52505d"
    },
    {
      "file": "neurobrix-0.1.0.tar.gz",
      "path": "/tmp/x/neurobrix-0.1.0.tar.gz",
      "kind": "sdist",
      "name": "neurobrix",
      "version": "0.1.0",
      "sha256": "b31ebe2e5758031e3c3d89680c4c86ae15267ad309dee4c54eed5afebae70821"
    }
  ],
  "smoke": [],
  "findings": [],
  "repository": {
    "commit": "275158aaf509683120bf331c793a21522e38dd58",
    "clean": true,
    "differs": []
  },
  "error": null
}
