"""What hidden tests call to grade a student's method, never a wall-clock threshold."""
