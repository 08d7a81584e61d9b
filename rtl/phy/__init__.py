"""PHY-lite: the XGMII mapping (spec §5) and the optional RS(272,258) FEC (spec §6)."""
