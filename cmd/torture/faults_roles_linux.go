package main

// faultRoles are the child sides of the faults, by the name after "fault".
var faultRoles = map[string]func(args []string) (*faultReport, error){
	"space":    spaceRole,
	"holder":   holderRole,
	"waiter":   waiterRole,
	"readonly": readOnlyRole,
	"fds":      fdsRole,
}
