import sys

from hades_ray.cli import main

sys.exit(main())
