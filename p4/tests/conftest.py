import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "translator", "controlplane"))
sys.path.insert(0, os.path.join(HERE, "..", "reporter", "controlplane"))
