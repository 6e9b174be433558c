package shell

// Native is the syntax of the shell people paste the printed commands
// into on this system: PowerShell on Windows.
const Native = PowerShell
