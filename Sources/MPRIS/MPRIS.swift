// MPRIS: see MPRISService (arrives with DBusKit).
