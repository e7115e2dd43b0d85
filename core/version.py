"""The version of the hpvm distribution.  (The API version a plugin's
targets are checked against is ``hpvm.target.CORE_API_VERSION``.)"""

__version__ = "0.1.0"
