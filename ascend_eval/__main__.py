from ascend_eval.cli.main import main

raise SystemExit(main())
